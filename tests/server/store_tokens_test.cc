// The tokens table across the schema migration that added expiries: a database written before it (schema 7) opens,
// keeps its tokens (valid until revoked, as they were made), and stores an expiry from then on.
#include <gtest/gtest.h>

#include "server/store/schema.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "tests/support/process.h"

namespace ladder::store {
namespace {

TEST(StoreTokens, ADatabaseFromBeforeExpiriesKeepsItsTokensAndStoresExpiriesAfter) {
  testing::TempDir dir("store-tokens");
  const std::string path = (dir / "ladder.db").string();
  {
    Db old(path);  // the schema as it was at version 7, with one token
    for (size_t i = 0; i < 7; ++i) old.Exec(Migrations()[i]);
    old.Exec("PRAGMA user_version=7");
    old.Exec("INSERT INTO tokens(name, role, sha256, created_at) VALUES('ci', 1, 'abcdef0123456789', 100)");
  }
  Store st(path);
  EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));  // every migration since ran
  auto rows = st.LoadTokens();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].info.name(), "ci");
  EXPECT_EQ(rows[0].info.expires_unix(), 0) << "a token made before expiries stays valid until revoked";
  const int64_t id = st.InsertToken("brief", v1::TOKEN_ROLE_VIEWER, "fedcba9876543210", 200, 2592200);
  st.InsertToken("forever", v1::TOKEN_ROLE_WORKER, "0011223344556677", 300);
  st.Flush();
  rows = st.LoadTokens();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].info.id(), id);
  EXPECT_EQ(rows[1].info.expires_unix(), 2592200);
  EXPECT_EQ(rows[2].info.expires_unix(), 0);
}

}  // namespace
}  // namespace ladder::store
