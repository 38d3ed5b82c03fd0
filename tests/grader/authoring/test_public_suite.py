"""grader.public_suite: the student copy of a suite keeps visible tests and what they use, nothing else."""

from __future__ import annotations

import ast
import textwrap

from grader.authoring.public_suite import public_copy

SUITE = textwrap.dedent('''\
    """Suite for task t."""
    import pytest

    from grader.suite import expect_close

    LIMIT = 3
    SECRET_SIZES = [97, 1013]
    pytestmark = pytest.mark.filterwarnings("ignore")


    def _shared(x):
        return x + LIMIT


    def _only_hidden(n):
        return _deeper(n) * 2


    def _deeper(n):
        return n


    @pytest.fixture
    def data():
        return 1


    def pytest_generate_tests(metafunc):
        pass


    # The secret check: a ring of odd length.
    @pytest.mark.parametrize("n", SECRET_SIZES)
    def test_secret(student, n):
        assert _only_hidden(n) and _shared(n), "the secret message nobody may see"


    def test_public(student, data):
        expect_close(_shared(data), 4, what="shared")


    class TestGroup:
        # hidden method comment
        def test_method_hidden(self):
            assert "method secret text"

        def test_method_public(self):
            assert _shared(1)


    class TestAllHidden:
        def test_x(self):
            pass
    ''')

VISIBLE = {"test_public", "test_method_public"}


def _defined(text: str) -> set[str]:
    tree = ast.parse(text)
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}


def test_hidden_tests_and_their_own_helpers_are_cut():
    copy = public_copy(SUITE, VISIBLE.__contains__)
    assert set(copy.kept) == VISIBLE
    assert set(copy.dropped) == {"test_secret", "test_method_hidden", "test_x"}
    defined = _defined(copy.text)
    assert {"test_secret", "test_method_hidden", "TestAllHidden", "test_x", "_only_hidden", "_deeper",
            "SECRET_SIZES"}.isdisjoint(defined)
    for text in ("secret message", "method secret text", "The secret check", "hidden method comment",
                 "SECRET_SIZES"):
        assert text not in copy.text


def test_what_public_tests_use_stays_and_the_copy_still_parses():
    copy = public_copy(SUITE, VISIBLE.__contains__)
    assert {"_shared", "LIMIT", "data", "pytestmark", "pytest_generate_tests", "TestGroup", "test_public",
            "test_method_public"} <= _defined(copy.text)
    assert copy.text.startswith('"""Suite for task t."""')
    assert "from grader.suite import expect_close" in copy.text
    compile(copy.text, "public.py", "exec")


def test_all_visible_is_the_file_unchanged():
    copy = public_copy(SUITE, lambda name: True)
    assert copy.text == SUITE and copy.dropped == ()


def test_nothing_visible_leaves_no_file():
    copy = public_copy(SUITE, lambda name: False)
    assert copy.text is None and copy.kept == () and "test_public" in copy.dropped


def test_a_helper_both_kinds_use_is_kept():
    copy = public_copy(SUITE, lambda name: name in {"test_public"})
    assert "_shared" in _defined(copy.text) and "_only_hidden" not in _defined(copy.text)
