"""Which submissions a batch sees, under which ids, and the shard split."""

import os

import pytest

from grader.classroom import classlist, lms_download, roster
from grader.errors import UsageError


def test_a_class_folder_lists_folders_and_archives_by_student_id_and_leaves_out_the_rest(tmp_path):
    klass = tmp_path / "class"
    (klass / "alice" / "exercise7").mkdir(parents=True)
    (klass / "bob.zip").write_bytes(b"")
    (klass / "carol.tar.gz").write_bytes(b"")
    (klass / ".DS_Store").write_bytes(b"")
    (klass / "notes.txt").write_text("")
    found = roster.discover([str(klass)], "exercise7")
    assert [e.student for e in found.entries] == ["alice", "bob", "carol"]
    assert [roster.kind(e.paths[0]) for e in found.entries] == ["folder", "zip", "tar"]
    assert found.left_out == [str(klass / "notes.txt")], "a stray file is no student, and is named"


def test_a_folder_with_modules_is_one_submission(tmp_path):
    (tmp_path / "dan").mkdir()
    (tmp_path / "dan" / "dot.py").write_text("")
    found = roster.discover([str(tmp_path / "dan")], "exercise7")
    assert found.entries == [roster.Entry("dan", (str(tmp_path / "dan"),))]


def test_an_id_sent_twice_is_one_entry_with_both_paths(tmp_path):
    (tmp_path / "a" / "gus").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "gus.zip").write_bytes(b"")
    (entry,) = roster.discover([str(tmp_path / "a"), str(tmp_path / "b")], "exercise7").entries
    assert entry == roster.Entry("gus", (str(tmp_path / "a" / "gus"), str(tmp_path / "b" / "gus.zip")), submissions=2)


def _files(folder, *names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(name)
    return folder


def test_a_canvas_download_is_one_entry_per_user_with_the_uploaded_names(tmp_path):
    """Canvas's loose files: sortable name, LATE for late work, user id, submission id, the file; a file
    name used before gets -1, -2 before its suffix."""
    download = _files(tmp_path / "submissions", "leeann_101_9001_dot.py", "leeann_101_9001_ring-2.py",
                      "ngben_LATE_102_9002_work.zip", "ottcy_103_9003_exercise7.ipynb", "notes.txt")
    found = roster.discover([str(download)], "exercise7")
    assert [e.student for e in found.entries] == ["101", "102", "103"]
    ann, ben, cy = found.entries
    assert sorted(name for _, name in ann.files) == ["dot.py", "ring.py"] and not ann.late
    assert ben.files == ((str(download / "ngben_LATE_102_9002_work.zip"), "work.zip"),) and ben.late
    assert cy.files[0][1] == "exercise7.ipynb"
    assert found.left_out == [str(download / "notes.txt")]


def test_a_roster_maps_canvas_user_ids_to_its_students(tmp_path):
    download = _files(tmp_path / "submissions", "leeann_101_9001_dot.py", "zedzoe_999_9009_dot.py")
    (tmp_path / "roster.csv").write_text("student,name,canvas_id\nann,Ann Lee,101\n")
    found = roster.discover([str(download)], "exercise7", classlist.load(str(tmp_path / "roster.csv")))
    assert [e.student for e in found.entries] == ["999", "ann"]  # 999 is not on the roster: its own id


def test_a_moodle_download_is_a_folder_per_participant(tmp_path):
    download = tmp_path / "submissions"
    _files(download / "Ann Lee_1234567_assignsubmission_file_", "dot.py")
    _files(download, "Ben Ng_7654321_assignsubmission_file_ring.py")
    found = roster.discover([str(download)], "exercise7")
    assert [(e.student, roster.kind(e.paths[0])) for e in found.entries] == [("1234567", "folder"),
                                                                             ("7654321", None)]
    assert found.entries[1].files[0][1] == "ring.py"


def _ids(found):
    return {e.student: sorted(os.path.basename(p) for p in e.paths) for e in found.entries}


def test_a_moodle_upload_named_like_a_classmate_stays_its_senders_own(tmp_path):
    """Moodle with folders off: 1001 uploads x_1002_assignsubmission_file_dot.py. Moodle writes its own
    prefix in front, with no "_" in the name, so the first participant id is the LMS's and 1002 keeps
    only its own file."""
    planted = "Ann Lee_1001_assignsubmission_file_x_1002_assignsubmission_file_dot.py"
    download = _files(tmp_path / "loose", planted, "Ben Ng_1002_assignsubmission_file_dot.py")
    found = roster.discover([str(download)], "exercise7")
    assert _ids(found) == {"1001": [planted], "1002": ["Ben Ng_1002_assignsubmission_file_dot.py"]}
    assert found.entries[0].files[0][1] == "x_1002_assignsubmission_file_dot.py"
    assert all(e.submissions == 1 for e in found.entries)


def test_a_file_named_like_a_classmate_inside_a_moodle_folder_is_never_read_for_identity(tmp_path):
    download = tmp_path / "folders"
    _files(download / "Ann Lee_1001_assignsubmission_file_", "Ben Ng_1002_assignsubmission_file_dot.py")
    _files(download / "Ben Ng_1002_assignsubmission_file_", "dot.py")
    found = roster.discover([str(download)], "exercise7")
    assert _ids(found) == {"1001": ["Ann Lee_1001_assignsubmission_file_"],
                           "1002": ["Ben Ng_1002_assignsubmission_file_"]}


@pytest.mark.parametrize("name, user, file, late", [
    ("leeann_101_9001_x_102_9002_dot.py", "101", "x_102_9002_dot.py", False),  # an upload named like 102's file
    ("leeann_101_9001_ngben_late_102_9002_dot.py", "101", "ngben_late_102_9002_dot.py", False),
    ("o_neilpat_103_9003_dot.py", "103", "dot.py", False),  # Canvas keeps "_" in a name (a word character)
    ("o_neilpat_LATE_103_9003_dot-1.py", "103", "dot.py", True),
    ("anon_hb2cq_9004_dot.py", "anon_hb2cq", "dot.py", False),  # anonymous grading: no name, no user id
    ("LATE_anon_x7k2p_9005_ring_102_9002_x.py", "anon_x7k2p", "ring_102_9002_x.py", True),
    ("Ann Lee_1001_assignsubmission_onlinetext_onlinetext.html", "1001", "onlinetext.html", False),
    ("Participant_1234567_assignsubmission_file_Ben Ng_7654321_assignsubmission_file_a.py", "1234567",
     "Ben Ng_7654321_assignsubmission_file_a.py", False),  # Moodle's blind marking
])
def test_whose_a_download_file_is_comes_from_the_lms_part_of_its_name(name, user, file, late):
    named = lms_download.parse(name)
    assert (named.user, named.file, named.late) == (user, file, late)


def test_the_same_user_in_two_downloads_is_two_submissions_never_merged(tmp_path):
    first = _files(tmp_path / "week7", "leeann_101_9001_dot.py")
    second = _files(tmp_path / "week7-late", "leeann_101_9077_ring.py")
    (entry,) = roster.discover([str(first), str(second)], "exercise7").entries
    assert entry.submissions == 2 and len(entry.paths) == 2


def test_a_path_given_twice_is_one_submission(tmp_path):
    download = _files(tmp_path / "week7", "leeann_101_9001_dot.py")
    dan = _files(tmp_path / "late" / "dan", "dot.py")
    found = roster.discover([str(download), str(download), str(dan), str(dan)], "exercise7")
    assert [(e.student, len(e.paths), e.submissions) for e in found.entries] == [("101", 1, 1), ("dan", 1, 1)]
    assert found.left_out == []
    (download / "notes.txt").write_text("")
    assert roster.discover([str(download), str(download)], "exercise7").left_out == [str(download / "notes.txt")]


def test_a_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        roster.discover([str(tmp_path / "nope")], "exercise7")


def test_shards_split_the_class_into_disjoint_parts_that_cover_it():
    ids = [f"student{i:03d}" for i in range(200)]
    parts = [{s for s in ids if roster.in_shard(s, (k, 3))} for k in (1, 2, 3)]
    assert sum(map(len, parts)) == len(ids) and set().union(*parts) == set(ids)
    assert all(40 < len(p) < 90 for p in parts), [len(p) for p in parts]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1-2", "a/b"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--shard"):
        roster.parse_shard(text)


@pytest.mark.parametrize("env, shard", [
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, (3, 4)),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"}, (1, 4)),
    ({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}, (1, 4)),  # --array=0-3
])
def test_shard_auto_reads_a_slurm_array_job(env, shard):
    assert roster.parse_shard("auto", env) == shard


def test_shard_auto_reads_the_ci_variables_named():
    assert roster.parse_shard("auto:CI_NODE_INDEX/CI_NODE_TOTAL", {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "5"}) == (2, 5)


@pytest.mark.parametrize("text, env, message", [
    ("auto", {}, "SLURM_ARRAY_TASK_ID is not set"),
    ("auto", {"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, "SLURM_ARRAY_TASK_ID is 'x'"),
    ("auto", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, "needs 1 <= K <= N, got 'auto (= 0/4)'"),
    ("auto:SHARD", {"SHARD": "1"}, "auto:INDEX_VAR/COUNT_VAR"),
    ("auto:SHARD/TOTAL", {"SHARD": "1"}, "TOTAL is not set"),
])
def test_a_shard_auto_without_its_variables_is_a_usage_error(text, env, message):
    with pytest.raises(UsageError) as info:
        roster.parse_shard(text, env)
    assert message in str(info.value)


def test_a_students_folder_shaped_like_a_class_folder_cannot_name_classmates(tmp_path):
    """``grade batch class/*``: mallory's folder holds bob/exercise7/ and no module of her own; read as a
    class folder it would hand in work as "bob". Beside its siblings it is refused, naming it."""
    klass = tmp_path / "class"
    _files(klass / "bob" / "exercise7", "dot.py")
    _files(klass / "mallory" / "bob" / "exercise7", "dot.py")
    with pytest.raises(UsageError, match=r"mallory holds no module of the exercise, so it would be read as a class"):
        roster.discover([str(klass / "bob"), str(klass / "mallory")], "exercise7")
    found = roster.discover([str(klass)], "exercise7")  # the class folder itself: mallory is her folder's name
    assert [e.student for e in found.entries] == ["bob", "mallory"]
    dan = _files(tmp_path / "late" / "dan", "dot.py")  # a class folder beside a few other paths is one
    assert [e.student for e in roster.discover([str(klass), str(dan)], "exercise7").entries] == ["bob", "dan",
                                                                                                  "mallory"]
    week8 = _files(tmp_path / "week8" / "carl", "dot.py").parent  # class folders only: each is one
    assert [e.student for e in roster.discover([str(klass), str(week8)], "exercise7").entries] == ["bob", "carl",
                                                                                                    "mallory"]
