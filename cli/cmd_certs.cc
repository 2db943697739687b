// ladder certs create DIR: a private CA and the server, worker and client certificates for TLS on every channel.
#include <iostream>

#include "cli/commands.h"
#include "common/certs.h"

namespace ladder::cli {

void SetupCerts(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* certs = app.add_subcommand("certs", "TLS certificates for the coordinator, its workers and clients");
  certs->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  auto opt = std::make_shared<CertsOptions>();
  auto* create = certs->add_subcommand(
      "create",
      "Make DIR/ca.crt+ca.key (a private CA), server.crt+key (the coordinator, named by --host), worker.crt+key "
      "and client.crt+key (mutual TLS), all mode 0600. Then: ladder-server --tls-cert DIR/server.crt --tls-key "
      "DIR/server.key --tls-ca DIR/ca.crt; ladder-worker --tls-ca DIR/ca.crt --tls-cert DIR/worker.crt --tls-key "
      "DIR/worker.key; ladder --tls-dir DIR ...; or ladder up --tls-dir DIR");
  create->add_option("DIR", *dir, "directory to write them to (created with mode 0700)")->required();
  create->add_option("--host", opt->hosts,
                     "a name or address clients reach the coordinator by (repeatable; default: localhost, 127.0.0.1, "
                     "::1 and this host's name)");
  create->add_option("--days", opt->days, "validity of the server, worker and client certificates")
      ->check(CLI::Range(1, 3650))
      ->capture_default_str();
  create->add_flag("--force", opt->overwrite, "replace certificates already in DIR");
  create->callback([dir, opt, &g, &exit_code] {
    if (opt->hosts.empty()) opt->hosts = DefaultCertHosts();
    try {
      const auto paths = CreateCertificates(*dir, *opt);
      if (g.json) {
        nlohmann::json j = {{"dir", *dir}, {"files", paths}, {"hosts", opt->hosts}};
        std::cout << j.dump() << "\n";
      } else {
        std::cout << "wrote " << paths.size() << " files to " << *dir << " (mode 0600); the server certificate "
                  << "names:";
        for (const auto& h : opt->hosts) std::cout << " " << h;
        std::cout << "\n  coordinator: ladder-server --tls-cert " << *dir << "/server.crt --tls-key " << *dir
                  << "/server.key --tls-ca " << *dir << "/ca.crt  (or ladder up --tls-dir " << *dir << ")\n"
                  << "  workers:     ladder-worker --tls-ca " << *dir << "/ca.crt --tls-cert " << *dir
                  << "/worker.crt --tls-key " << *dir << "/worker.key\n"
                  << "  CLI:         ladder --tls-dir " << *dir << " ...  (ca.crt, client.crt, client.key)\n"
                  << "  keep " << *dir << "/ca.key away from shared storage: it can sign more certificates\n";
      }
      exit_code = kOk;
    } catch (const std::exception& e) {
      std::cerr << "ladder certs create: " << e.what() << "\n";
      exit_code = kBadInput;
    }
  });
}

}  // namespace ladder::cli
