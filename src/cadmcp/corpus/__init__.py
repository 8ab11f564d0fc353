"""The corpus runner: real files through a real daemon, as an agent would use them.

`cadmcp eval corpus PATH...` (see :mod:`cadmcp.corpus.command`) finds the files
(:mod:`~cadmcp.corpus.files`), runs each one (:mod:`~cadmcp.corpus.runner`) with the
application's probe (:mod:`~cadmcp.corpus.probes`), compares canonical dumps
(:mod:`~cadmcp.corpus.compare`), checks pictures (:mod:`~cadmcp.corpus.pictures`) and
prints the table (:mod:`~cadmcp.corpus.report`).
"""
