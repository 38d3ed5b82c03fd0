"""The instructor's tools for the course itself: proving it sound (:mod:`.check`) and releasing it to
students and Gradescope (:mod:`.release`, with :mod:`.public_suite`, :mod:`.release_scan`, :mod:`.pins`)."""
