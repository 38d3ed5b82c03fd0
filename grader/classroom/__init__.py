"""Grading a class: which submissions (:mod:`.roster`, :mod:`.unpack`), the batch that grades each in a
process of its own (:mod:`.batch`), the SQLite gradebook it fills (:mod:`.gradebook`,
:mod:`.fingerprint`), what it shows on the way and at the end (:mod:`.progress`, :mod:`.summary`),
and the exports other tools read (:mod:`.exports`)."""
