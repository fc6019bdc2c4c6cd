/* db_pg_none.c - built without libpq: no PostgreSQL backend (the store
 * refuses postgresql:// URLs with a message naming the library). */
#include "netstore/db.h"

const nsdb_ops *const synor__nsdb_pg = NULL;
