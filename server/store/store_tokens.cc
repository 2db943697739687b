// Store: the access tokens other than <db>.token (ladder tokens create), each kept as its SHA-256 only.
#include "server/store/store.h"

namespace ladder::store {

int64_t Store::InsertToken(const std::string& name, v1::TokenRole role, const std::string& sha256, double now,
                           double expires_unix) {
  BeginIfNeeded();
  auto& st = db_.Prepare("INSERT INTO tokens(name, role, sha256, created_at, expires_at) VALUES(?,?,?,?,?)");
  st.Bind(1, name).Bind(2, static_cast<int64_t>(role)).Bind(3, sha256).Bind(4, now);
  if (expires_unix > 0) {
    st.Bind(5, expires_unix);
  } else {
    st.BindNull(5);
  }
  st.Run();
  return db_.LastInsertId();
}

void Store::RevokeToken(int64_t id, double now) {
  BeginIfNeeded();
  auto& st = db_.Prepare("UPDATE tokens SET revoked_at=? WHERE id=? AND revoked_at IS NULL");
  st.Bind(1, now).Bind(2, id);
  st.Run();
}

std::vector<Store::TokenRow> Store::LoadTokens() {
  std::vector<TokenRow> out;
  auto& st = db_.Prepare("SELECT id, name, role, sha256, created_at, revoked_at, expires_at FROM tokens ORDER BY id");
  while (st.Step()) {
    TokenRow& row = out.emplace_back();
    row.info.set_id(st.Int(0));
    row.info.set_name(st.Text(1));
    row.info.set_role(static_cast<v1::TokenRole>(st.Int(2)));
    row.sha256 = st.Text(3);
    row.info.set_fingerprint(row.sha256.substr(0, 12));
    row.info.set_created_unix(st.Real(4));
    if (!st.IsNull(5)) row.info.set_revoked_unix(st.Real(5));
    if (!st.IsNull(6)) row.info.set_expires_unix(st.Real(6));
  }
  st.Reset();
  return out;
}

}  // namespace ladder::store
