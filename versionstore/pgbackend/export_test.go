package pgbackend

// Migrations is the schema's migrations, for tests that build an old one.
var Migrations = migrations
