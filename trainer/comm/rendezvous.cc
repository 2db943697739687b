#include "trainer/comm/rendezvous.h"

#include "trainer/comm/bound_store.h"
#include "trainer/comm/store_server.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <cstdlib>
#include <filesystem>

namespace ladder::trainer::comm {

namespace {

// Slurm's name for the same value, for ranks started by srun (ladder's launcher: srun): SLURM_PROCID for RANK,
// SLURM_NTASKS for WORLD_SIZE, SLURM_LOCALID for LOCAL_RANK.
const char* SlurmFallback(const char* name) {
  const std::string n = name;
  return n == "RANK" ? "SLURM_PROCID" : n == "WORLD_SIZE" ? "SLURM_NTASKS" : n == "LOCAL_RANK" ? "SLURM_LOCALID" : nullptr;
}

bool Env(const std::string& backend, const char* name, std::string* out, std::string* error) {
  const char* v = std::getenv(name);
  if ((!v || !*v) && SlurmFallback(name)) v = std::getenv(SlurmFallback(name));
  if (!v || !*v) {
    *error = backend + " backend: environment variable " + name +
             " is not set (start ranks with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as torchrun "
             "does; under srun RANK, WORLD_SIZE and LOCAL_RANK default to SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID)";
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

bool JoinRendezvous(const std::string& backend, std::chrono::milliseconds timeout, Rendezvous* out,
                    std::string* error) {
  std::string rank_s, size_s;
  if (!Env(backend, "RANK", &rank_s, error) || !Env(backend, "WORLD_SIZE", &size_s, error) ||
      !Env(backend, "MASTER_ADDR", &out->addr, error) || !Env(backend, "MASTER_PORT", &out->port, error)) {
    return false;
  }
  out->rank = std::atoi(rank_s.c_str());
  out->size = std::atoi(size_s.c_str());
  const int port = std::atoi(out->port.c_str());
  if (out->size < 1 || out->rank < 0 || out->rank >= out->size || port <= 0 || port > 65535) {
    *error = backend + " backend: bad RANK/WORLD_SIZE/MASTER_PORT (" + rank_s + "/" + size_s + "/" + out->port + ")";
    return false;
  }
  std::string lr, ignored;
  out->local_rank = Env(backend, "LOCAL_RANK", &lr, &ignored) ? std::atoi(lr.c_str()) : out->rank;
  // Every rank on one node (its worker started them all and names a file in the trial's directory, one per run):
  // a FileStore there, so that no rendezvous port is open on any interface.
  if (const char* file = std::getenv("LADDER_RENDEZVOUS_FILE"); file && *file) {
    // The worker made the file's directory (the trial's) before it started the ranks: a rank that cannot see it
    // runs where that directory is not (a container that does not bind the worker's trial directory), and c10d's
    // FileStore would wait the whole timeout for a file it can never create.
    const std::filesystem::path dir = std::filesystem::path(file).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
      *error = backend + " backend: rendezvous file " + file + ": its directory " + dir.string() +
               " is not there (inside a container, the worker's trial directory must be visible: keep " +
               "ladder-worker --trial-dir under /tmp for Charliecloud, or bind it; docs/guide/containers.md)";
      return false;
    }
    try {
      out->store = c10::make_intrusive<c10d::FileStore>(file, out->size);
      out->store->setTimeout(timeout);
    } catch (const std::exception& e) {
      *error = backend + " backend: rendezvous in " + file + " failed: " + e.what();
      return false;
    }
    return true;
  }
  // Ranks on several nodes: rank 0 serves the store on MASTER_ADDR's address only (not every interface, as
  // c10d's TCPStore would), and with the group's secret a connection without it is closed before it reads a key.
  const char* secret = std::getenv("LADDER_RENDEZVOUS_SECRET");
  try {
    out->store = c10::make_intrusive<BoundTcpStore>(out->addr, static_cast<uint16_t>(port), out->rank == 0,
                                                    secret ? secret : "", timeout);
  } catch (const PortInUse& e) {
    throw RendezvousPortInUse(backend + " backend: rendezvous at " + out->addr + ":" + out->port + " failed: " +
                              e.what());
  } catch (const std::exception& e) {
    *error = backend + " backend: rendezvous at " + out->addr + ":" + out->port + " failed: " + e.what();
    return false;
  }
  return true;
}

}  // namespace ladder::trainer::comm
