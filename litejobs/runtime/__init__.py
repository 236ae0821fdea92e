"""What the three runtimes (``runworker``, ``runscheduler``, ``runrelay``) share: ``startup``
(the start checks, waiting for the database, the default log handler), ``stopping``
(SIGTERM/SIGINT), ``outage`` (riding out a database outage), ``listening`` (the LISTEN
connection) and ``leadership`` (the leader leases of the scheduler and the relay)."""
