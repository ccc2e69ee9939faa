"""The backup tests start and stop embedded clusters of their own (tests/backup/kept.py), each a copy of
one loaded once per session (initdb, migrations and the Nexo morning cost seconds each time)."""

from __future__ import annotations

import pytest

from tests.backup.kept import KeptDataDir


@pytest.fixture(scope="session")
def template():
    """The data directory of a stopped kept cluster holding the schema and the Nexo morning."""
    place = KeptDataDir()
    place.start()
    place.load_demo()
    place.stop()
    yield place.data_dir
    place.close()


@pytest.fixture
def kept(template):
    """A NEXO_DATA_DIR whose kept cluster runs, archiving, with the Nexo morning loaded."""
    place = KeptDataDir(template=template)
    place.start()
    yield place
    place.close()
