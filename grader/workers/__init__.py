"""The grader side's handles on the processes that run student code.

Which devices a worker gets (:mod:`.backends`), how a worker process comes to exist (:mod:`.launch`,
:mod:`.zygote`), the handle on one worker (:mod:`.worker`) and on a multi-process group
(:mod:`.group`), and the pool of them for one grading run (:mod:`.pool`). Nothing here runs
student code; it only starts, asks, times out and kills the processes that do.
"""
