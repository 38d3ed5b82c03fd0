"""Archives from students are unpacked safely: nothing escapes, no link is made, limits hold."""

import io
import os
import stat
import tarfile
import zipfile

import pytest

from grader.classroom import unpack
from grader.submission import MAX_BYTES, MAX_FILES


def make_zip(path, entries):
    """entries: {name: bytes}, or {name: ("link", target)} for a symbolic link."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            if isinstance(data, tuple):
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, data[1])
            else:
                zf.writestr(name, data)
    return path


def make_tar(path, entries):
    """entries: {name: bytes}, or {name: (kind, target)} with kind "link" (symbolic) or "hard"."""
    with tarfile.open(path, "w:gz") as tf:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            if isinstance(data, tuple):
                info.type = tarfile.SYMTYPE if data[0] == "link" else tarfile.LNKTYPE
                info.linkname = data[1]
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


MAKERS = {"zip": (make_zip, ".zip"), "tar": (make_tar, ".tar.gz")}


@pytest.fixture(params=sorted(MAKERS))
def archive(request, tmp_path):
    """archive({name: data}) -> path of a .zip or a .tar.gz (each test runs with both)."""
    maker, suffix = MAKERS[request.param]
    return lambda entries: maker(tmp_path / f"alice{suffix}", entries)


def refusal(path, tmp_path) -> str:
    with pytest.raises(unpack.Refused) as exc:
        unpack.unpack(str(path), str(tmp_path / "out"))
    return str(exc.value)


def test_a_good_archive_unpacks_and_its_lone_folder_is_entered(archive, tmp_path):
    path = archive({"alice/exercise7/dot.py": b"x = 1\n", "__MACOSX/alice/._dot.py": b"junk"})
    unpack.unpack(str(path), str(tmp_path / "out"))
    assert (tmp_path / "out/alice/exercise7/dot.py").read_bytes() == b"x = 1\n"
    assert not (tmp_path / "out/__MACOSX").exists()
    assert unpack.content_root(str(tmp_path / "out"), "exercise7") == str(tmp_path / "out/alice")


@pytest.mark.parametrize("name", ["../evil.py", "exercise7/../../evil.py", "/tmp/evil.py"])
def test_a_path_escaping_the_folder_is_refused_and_nothing_is_written(archive, tmp_path, name):
    path = archive({"exercise7/dot.py": b"ok\n", name: b"evil\n"})
    assert f"archive entry {name!r} points outside the submission folder" in refusal(path, tmp_path)
    assert not (tmp_path / "evil.py").exists() and not os.path.exists("/tmp/evil.py")
    assert not (tmp_path / "out").exists(), "a refused archive leaves nothing unpacked"


def test_a_symbolic_link_is_refused(archive, tmp_path):
    path = archive({"exercise7/dot.py": ("link", "/etc/passwd")})
    assert "'exercise7/dot.py' is a link; links are refused" in refusal(path, tmp_path)


def test_a_hard_link_in_a_tar_is_refused(tmp_path):
    path = make_tar(tmp_path / "bob.tar.gz", {"a.py": b"x\n", "b.py": ("hard", "a.py")})
    assert "'b.py' is a link" in refusal(path, tmp_path)


def test_a_submission_folder_holding_a_link_is_refused(tmp_path):
    (tmp_path / "alice" / "exercise7").mkdir(parents=True)
    (tmp_path / "alice" / "exercise7" / "dot.py").symlink_to("/etc/passwd")
    with pytest.raises(unpack.Refused, match="exercise7/dot.py is a link; links are refused"):
        unpack.refuse_links(str(tmp_path / "alice"))


def test_too_many_files_are_refused(archive, tmp_path):
    path = archive({f"f{i}.py": b"" for i in range(MAX_FILES + 1)})
    assert f"more than {MAX_FILES} entries" in refusal(path, tmp_path)


def test_a_compression_bomb_is_refused_while_unpacking(archive, tmp_path):
    path = archive({"big.py": b"\0" * (MAX_BYTES + 1)})
    assert os.path.getsize(path) < MAX_BYTES // 100
    assert f"unpacks to more than {MAX_BYTES >> 20} MiB" in refusal(path, tmp_path)


def test_an_empty_archive_is_refused(archive, tmp_path):
    path = archive({})
    assert refusal(path, tmp_path) == "archive is empty: it holds no files"


def test_a_file_that_is_not_an_archive_is_refused(tmp_path):
    path = tmp_path / "carol.zip"
    path.write_text("not a zip")
    assert "not a readable .zip archive" in refusal(path, tmp_path)


def test_padding_in_an_entry_left_out_is_inflated_no_further_than_the_size_bound(tmp_path):
    """An entry the intake leaves out (``__MACOSX/``) must still be inflated to reach the next header of
    a .tar.gz: 64 MiB of zeros (a few hundred KiB packed) stop at READ_BYTES, named as the size bound."""
    archive = tmp_path / "padded.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tf:
        info = tarfile.TarInfo("__MACOSX/padding")
        info.size = 64 << 20
        tf.addfile(info, io.BytesIO(bytes(info.size)))
        info = tarfile.TarInfo("exercise7/dot.py")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"\n"))
    assert archive.stat().st_size < MAX_BYTES
    with pytest.raises(unpack.Refused, match=r"inflates to more than 32 MiB, entries left out included \(the "
                                             r"intake's size bound\)"):
        unpack.unpack(str(archive), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_header_built_to_be_read_into_memory_stops_at_the_size_bound(tmp_path):
    archive = tmp_path / "pax.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo("dot.py")
        info.pax_headers = {"comment": "x" * (40 << 20)}
        tf.addfile(info, io.BytesIO(b""))
    with pytest.raises(unpack.Refused, match="intake's size bound"):
        unpack.unpack(str(archive), str(tmp_path / "out"))


@pytest.mark.parametrize("maker", [make_zip, make_tar])
def test_reading_stops_at_the_time_bound_and_says_so(tmp_path, monkeypatch, maker):
    archive = maker(tmp_path / ("a.zip" if maker is make_zip else "a.tar.gz"), {"dot.py": b"x = 1\n"})
    monkeypatch.setattr(unpack, "READ_S", -1.0)  # already spent: the first check stops it
    with pytest.raises(unpack.Refused, match=r"took more than -1 s to read \(the intake's time bound\)"):
        unpack.unpack(str(archive), str(tmp_path / "out"))


def test_an_lms_download_larger_than_a_submission_is_refused_before_it_is_copied(tmp_path):
    from grader.classroom import intake, roster

    big = tmp_path / "leeann_101_9001_dot.py"
    with open(big, "wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    entry = roster.Entry("101", (str(big),), ((str(big), "dot.py"),))
    with pytest.raises(unpack.Refused, match="add up to more than 16 MiB"):
        intake.open_submission(entry, str(tmp_path / "scratch"), "exercise7")
    assert not (tmp_path / "scratch" / "submitted").exists()
