"""The extraction stages' units, callable without Beam: dumps into documents (``docs``), link sources into sitelinks and page entities (``links``).

A floor of its own, just above ``formats/``: a unit reads a dump through its format's
reader (``formats/``) and keeps what the method (``method/``) makes of it, so it can sit
on neither of those floors; it needs nothing of ``output/`` or above (docs/architecture.md).
"""
