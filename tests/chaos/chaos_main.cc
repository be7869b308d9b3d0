// natsfleet-chaos: runs natsfleet under random faults and checks the history it leaves.
//
//   natsfleet-chaos run [--seconds 300] [--seed N] [--replicas 3] [--rate 200] [--out DIR]
//                       [--keys N [--partitions 16]]   (per-key ordered work, order checked)
//                       [--debug 1]   (replicas log every message decision: log_level = "debug")
//                       [--faults replica-kill,node-kill,...]   (only these kinds; default all)
//   natsfleet-chaos check DIR [--self-test]
//
// Exit 0: the checker passed. 1: it failed (lost messages, or a stall past its bound). 2: usage,
// or the run could not be set up.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "chaos/chaos_run.h"
#include "chaos/checker.h"
#include "chaos/history.h"

namespace {

using namespace natsfleet::chaos;

int usage() {
  std::fprintf(
      stderr,
      "usage: natsfleet-chaos run [--seconds N] [--seed N] [--replicas N] [--rate N] [--keys N] "
      "[--partitions N] "
      "[--debug 0|1] [--faults KIND,...] [--out DIR]\n"
      "       natsfleet-chaos check DIR [--self-test]\n");
  return 2;
}

// "replica-kill,node-kill" into kinds; false (and a message) on a name that is not a kind.
bool fault_kinds(const std::string& list, std::set<FaultKind>& out) {
  size_t from = 0;
  while (from <= list.size()) {
    const size_t comma = std::min(list.find(',', from), list.size());
    const std::string name = list.substr(from, comma - from);
    const auto kind = fault_kind_named(name);
    if (!kind) {
      std::string known;
      for (int i = 0; i < kFaultKinds; ++i)
        known += std::string(i ? ", " : "") + fault_kind_name(static_cast<FaultKind>(i));
      std::fprintf(stderr, "natsfleet-chaos: no fault kind '%s' (kinds: %s)\n", name.c_str(),
                   known.c_str());
      return false;
    }
    out.insert(*kind);
    from = comma + 1;
  }
  return true;
}

bool number(const char* text, long long& out) {
  char* end = nullptr;
  out = std::strtoll(text, &end, 10);
  return end && *end == '\0' && end != text;
}

int check_command(const std::vector<std::string>& args) {
  if (args.empty()) return usage();
  CheckOptions options;
  std::string dir;
  for (const auto& a : args) {
    if (a == "--self-test") {
      options.drop_one_record = true;
      options.swap_one_key = true;
    } else if (dir.empty()) {
      dir = a;
    } else {
      return usage();
    }
  }
  try {
    const History history = read_history(dir);
    const auto bounds = check_options_for(history);
    options.stall_bound_ms = bounds.stall_bound_ms;
    options.blame_window_ms = bounds.blame_window_ms;
    options.order_tolerance_ms = bounds.order_tolerance_ms;
    const Verdict verdict = check(history, options);
    std::printf("%s", report(verdict).c_str());
    return verdict.pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "natsfleet-chaos check: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "check") return check_command(args);
  if (command != "run") return usage();

  RunOptions options;
  options.natsfleet = NATSFLEET_CLI_BIN;
  options.seed = std::random_device{}();
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) return usage();
    const char* value = args[++i].c_str();
    long long n = 0;
    if (flag == "--out") {
      out = value;
    } else if (flag == "--faults") {
      if (!fault_kinds(value, options.faults)) return 2;
    } else if (!number(value, n) || n < 0) {
      std::fprintf(stderr, "natsfleet-chaos: %s wants a number, got '%s'\n", flag.c_str(), value);
      return 2;
    } else if (flag == "--seconds" && n >= 10) {
      options.length = std::chrono::seconds(n);
    } else if (flag == "--seed") {
      options.seed = static_cast<uint64_t>(n);
    } else if (flag == "--replicas" && n >= 1 && n <= 9) {
      options.replicas = static_cast<int>(n);
    } else if (flag == "--rate" && n >= 1 && n <= 5000) {
      options.publish_rate = static_cast<int>(n);
    } else if (flag == "--keys" && n >= 1 && n <= 1'000'000) {
      options.keys = static_cast<int>(n);
    } else if (flag == "--partitions" && n >= 1 && n <= 1024) {
      options.partitions = static_cast<int>(n);
    } else if (flag == "--debug" && n <= 1) {
      options.debug_log = n == 1;
    } else {
      std::fprintf(stderr,
                   "natsfleet-chaos: bad %s %s (seconds >= 10, replicas 1..9, rate 1..5000, keys "
                   "1..1000000, partitions 1..1024, debug 0..1)\n",
                   flag.c_str(), value);
      return 2;
    }
  }
  if (out.empty()) {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
    out = std::string("chaos-runs/") + stamp + "-seed" + std::to_string(options.seed);
  }
  // Absolute: the replicas' configs name their sink files, and a relative path in a config is
  // read from the config file's folder.
  options.out_dir = std::filesystem::absolute(out).lexically_normal().string();
  try {
    return run_chaos(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "natsfleet-chaos: %s\n", e.what());
    return 2;
  }
}
