// The store's schema: its tables (schema.cc has the SQL), its version in the
// `meta` table, creation and migration.
#pragma once

#include "store/sqlite.h"

namespace solbench::store::detail {

// Creates the schema in an empty database (when `may_create`), migrates an
// older one, and returns the version now in the file. Refuses (StoreError
// naming the file) a newer version, a database with tables but no meta table,
// a meta table without a version, and an empty database when !may_create.
int ensure_schema(Database& db, bool may_create);

}  // namespace solbench::store::detail
