"""Which submissions a batch sees, under which ids, and the shard split."""

import pytest

from grader.classroom import roster
from grader.errors import UsageError


def test_a_class_folder_lists_folders_and_archives_by_student_id(tmp_path):
    klass = tmp_path / "class"
    (klass / "alice" / "exercise7").mkdir(parents=True)
    (klass / "bob.zip").write_bytes(b"")
    (klass / "carol.tar.gz").write_bytes(b"")
    (klass / ".DS_Store").write_bytes(b"")
    (klass / "notes.txt").write_text("")
    entries = roster.discover([str(klass)], "exercise7")
    assert [e.student for e in entries] == ["alice", "bob", "carol", "notes.txt"]
    assert [roster.kind(e.paths[0]) for e in entries] == ["folder", "zip", "tar", None]


def test_a_folder_with_modules_is_one_submission(tmp_path):
    (tmp_path / "dan").mkdir()
    (tmp_path / "dan" / "dot.py").write_text("")
    assert roster.discover([str(tmp_path / "dan")], "exercise7") == [roster.Entry("dan", (str(tmp_path / "dan"),))]


def test_an_id_sent_twice_is_one_entry_with_both_paths(tmp_path):
    (tmp_path / "a" / "gus").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "gus.zip").write_bytes(b"")
    (entry,) = roster.discover([str(tmp_path / "a"), str(tmp_path / "b")], "exercise7")
    assert entry == roster.Entry("gus", (str(tmp_path / "a" / "gus"), str(tmp_path / "b" / "gus.zip")))


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
