"""Live admin pages over websockets (``litejobs[live]``): who may keep a socket open
(``access``), the database connections that listen for changes (``connections``), the
dashboard's watcher (``watcher``), and the channels consumers and routes (``consumers``,
``routing``). Only ``consumers`` and ``routing`` import channels."""
