"""Third-party components arrive through the ``dashrag.components`` entry-point group."""

import sys
import textwrap

from dashrag.core import registry


def test_entry_point_plugin_registers_its_component(tmp_path, monkeypatch):
    (tmp_path / "my_plugin.py").write_text(textwrap.dedent('''
        from dashrag.core.params import NoParams
        from dashrag.core.registry import register
        from dashrag.chunkers.base import Chunker

        @register(kind="chunker", icon="X", category="plugin", en=("Line", "One chunk per line."),
                  es=("Línea", "Un fragmento por línea."), representation="lines")
        class LineChunker(Chunker[NoParams]):
            SCHEMA = NoParams
            def spans(self, text):
                out, start = [], 0
                for line in text.splitlines(keepends=True):
                    out.append((start, start + len(line)))
                    start += len(line)
                return out
    '''))
    dist = tmp_path / "my_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dashrag.components]\nline = my_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    try:
        cls = registry.get_component("LineChunker")
        assert cls.META.category == "plugin"
        assert cls({}).spans("a\nbb\n") == [(0, 2), (2, 5)]
    finally:
        registry._REGISTRY.pop("LineChunker", None)
        sys.modules.pop("my_plugin", None)
