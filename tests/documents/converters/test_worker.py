"""The converter process: a crash costs its file, a child that died between files is replaced."""

import os
import signal

import pytest

from dashrag.documents.converters import ConversionFailed, ReadLimits
from dashrag.documents.converters.worker import ConversionWorker
from tests.fixtures.documents import write_pdf


class KilledAfterTheRequest:
    """The parent's end of the pipe, whose child is killed (as a segfault in a C parser ends it) right after a
    request reaches it: the answer never comes."""

    def __init__(self, conn, process):
        self.conn, self.process = conn, process

    def send(self, request) -> None:
        self.conn.send(request)
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.join()

    def __getattr__(self, name):
        return getattr(self.conn, name)


def test_a_child_killed_while_converting_is_that_files_failure_and_the_next_file_is_read(tmp_path):
    first = write_pdf(tmp_path / "a.pdf", [["first"]])
    second = write_pdf(tmp_path / "b.pdf", [["second"]])
    with ConversionWorker(ReadLimits(timeout_s=120)) as worker:
        worker._conn = KilledAfterTheRequest(worker._started(), worker._process)
        with pytest.raises(ConversionFailed, match=r"the converter crashed on it \(exit code -9\)"):
            worker.convert(first, "pdf")
        assert worker.convert(second, "pdf").text == "second"


def test_a_child_that_died_between_files_is_replaced(tmp_path):
    path = write_pdf(tmp_path / "a.pdf", [["text"]])
    with ConversionWorker(ReadLimits(timeout_s=120)) as worker:
        assert worker.convert(path, "pdf").text == "text"
        os.kill(worker._process.pid, signal.SIGKILL)
        worker._process.join()
        assert worker.convert(path, "pdf").text == "text"
