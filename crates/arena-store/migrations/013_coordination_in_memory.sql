-- Who drives which battle and series (leases) and who waits for or holds
-- which lane (tickets, grants, the model a server served last) move to the
-- live journal (see src/live.rs): they matter only while processes run,
-- are renewed every half second, and a crash or a restart leaves nothing
-- in them worth keeping (a dead holder's lease and tickets are dropped
-- anyway). In the database they cost a disk write at every renewal.

DROP TABLE lane_tickets;
DROP TABLE lane_grants;
DROP TABLE lanes;
DROP TABLE leases;
DROP TABLE series_leases;
