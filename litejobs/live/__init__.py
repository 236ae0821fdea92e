"""Live admin pages over websockets (``litejobs[live]``): who may keep a socket open
(``access``), the database connections that listen for changes (``connections``), the
dashboard's watcher (``watcher``), and the sockets (the pages'
websockets, Channels consumers) and their routes (``sockets``, ``routing``). Only ``sockets`` and
``routing`` import channels."""
