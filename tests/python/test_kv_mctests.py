"""tools/kv-memcached-tests: the build directory it makes for memcached's test files."""
import os
import subprocess

from locus_tools import kv_mctests


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def _repo(tmp_path, with_doc):
    repo = tmp_path / "memcached"
    (repo / "t").mkdir(parents=True)
    (repo / "t" / "a.t").write_text("print 1;\n")
    if with_doc:
        (repo / "doc").mkdir()
        (repo / "doc" / "protocol.txt").write_text("the protocol\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "x")
    _git(repo, "tag", "1.6.18")
    return repo


def test_git_checkout_gives_t_and_the_protocol_text(tmp_path):
    repo = _repo(tmp_path, with_doc=True)
    work = tmp_path / "work"
    work.mkdir()
    kv_mctests.extract_t(str(repo), "1.6.18", str(work))
    assert (work / "t" / "a.t").read_text() == "print 1;\n"
    assert (work / "doc" / "protocol.txt").read_text() == "the protocol\n"


def test_git_checkout_without_doc_gives_t_alone(tmp_path):
    repo = _repo(tmp_path, with_doc=False)
    work = tmp_path / "work"
    work.mkdir()
    kv_mctests.extract_t(str(repo), "1.6.18", str(work))
    assert (work / "t" / "a.t").exists()
    assert not (work / "doc").exists()


def test_plain_directory_copies_doc_too_and_replaces_old_copies(tmp_path):
    src = tmp_path / "src"
    (src / "t").mkdir(parents=True)
    (src / "t" / "b.t").write_text("print 2;\n")
    (src / "doc").mkdir()
    (src / "doc" / "protocol.txt").write_text("new\n")
    work = tmp_path / "work"
    (work / "t").mkdir(parents=True)
    (work / "t" / "stale.t").write_text("old\n")
    kv_mctests.extract_t(str(src), "1.6.18", str(work))
    assert sorted(os.listdir(work / "t")) == ["b.t"]
    assert (work / "doc" / "protocol.txt").read_text() == "new\n"
