"""nerve.testing: unique names whose channels are removed afterwards."""

from __future__ import annotations

import os

import nerve
import nerve.testing


def test_unique_names_are_removed_at_the_end_of_the_block() -> None:
    with nerve.testing.unique_names() as name:
        a, b = name("a"), name("b")
        assert a != b and a.startswith(nerve.testing.PREFIX) and a.endswith("-a")
        nerve.create(a, slots=4, size=4096).close()
        nerve.create(b, slots=4, size=4096).close()
        assert {a, b} <= {i.name for i in nerve.list_channels()}
    assert not {a, b} & {i.name for i in nerve.list_channels()}
    assert not nerve.testing.leftovers()


def test_a_file_that_is_not_a_channel_is_removed_too() -> None:
    with nerve.testing.unique_names() as name:
        n = name("junk")
        with open(f"/dev/shm/nerve.{n}", "wb") as f:
            f.write(b"not a channel")
        assert nerve.testing.leftovers()
    assert not os.path.exists(f"/dev/shm/nerve.{n}")
    assert not nerve.testing.leftovers()


def test_the_name_fixture_is_the_shared_plugins(name) -> None:
    # tests/python and tests/python_tools both take `name` from the plugin
    # nerve.testing (pytest_plugins in their conftest.py).
    assert isinstance(name, nerve.testing.Names)
    n = name("x")
    assert n.startswith(nerve.testing.PREFIX) and n in name.made
