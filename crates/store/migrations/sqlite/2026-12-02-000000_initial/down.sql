DROP TABLE api_tokens;
DROP TABLE events;
DROP TABLE leases;
DROP TABLE instances;
DROP TABLE scale_sets;
DROP TABLE entities;
DROP TABLE credentials;
DROP TABLE controller;
