"""The base every room stands on: standard library only, loadable by the hooks.

    errors.py   the one exception tree, rooted at ``MemspoolError``
    home.py     the home folder's layout: file names, hook events, the default home
    project.py  which project a session or a memory belongs to (its repository)
    kinds.py    the closed sets a memory row holds: type, layer, what a save did
    terms.py    how text becomes search terms (FTS5 index and query side)
    porter.py   the Porter stemmer, as FTS5's porter tokenizer stems
    lexical.py  ranking by words at a bounded cost, and the relevance bar
    quoting.py  memory as an agent reads it: tags, fences and unseen characters made plain

Nothing here imports another memspool package, and this module imports
nothing: the hook scripts run under ``python -I -S`` and load the modules
they need (``errors``, ``home``, ``project``, ``terms``, ``porter``,
``lexical``, ``quoting``) by name, without site-packages. ``errors``, ``home``,
``project`` and ``terms`` avoid ``typing`` and ``pathlib`` for the same reason.
"""
