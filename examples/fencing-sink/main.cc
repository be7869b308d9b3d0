// fencing-sink: a worker for natsfleet's worker sink that applies ordered work's writes to a
// state file and refuses the late ones.
//
//   natsfleet-example-fencing-sink STATE_FILE KEY_TOKEN
//
// It reads sink records (JSON lines, "id" first) on stdin, answers {"id":..,"result":"ack"} on
// stdout, and keeps STATE_FILE as {"<key>":{"data":..,"stream_seq":..}}: each key's newest value
// (the record's data as it carries it) with the stream sequence that wrote it. KEY_TOKEN is the
// 1-based subject token holding the key, as the work's key_token.
//
// THE RULE a fencing sink applies: ignore a write whose stream sequence for this key is not above
// the last one applied.
//
// Why: natsfleet hands a key's messages out one at a time, in stream order, from the replica that
// holds the partition's lease. A replica paused past its lease (a long GC pause, a frozen VM)
// cannot know it lost the lease until it runs again, and by then it may be writing a message the
// new owner has already handled and moved past. No client can prevent that late write; only the
// receiver can refuse it. Each record of ordered work carries a fencing token for this: partition,
// epoch (the lease's revision) and stream_seq. A receiver may also refuse an epoch below the
// newest it saw for the partition, but for order the per-key sequence alone suffices: a key's
// messages sit in one stream in rising sequence, so a late or repeated write carries a sequence
// at or below one already applied.
//
// A refused write is acked all the same: what it would have written is already there or
// replaced. The sequence is saved with the value in one atomic rewrite, so a restart keeps the
// fence.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

using nlohmann::json;

// The 1-based `token` of a dot-separated subject; empty when the subject is shorter.
std::string subject_token(const std::string& subject, int token) {
  std::istringstream in(subject);
  std::string part;
  for (int i = 0; i < token; ++i)
    if (!std::getline(in, part, '.')) return {};
  return part;
}

json load_state(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json::object();  // the first run
  // A damaged file throws: better stop than forget the fence.
  return json::parse(in);
}

// A temporary file beside `path`, synced, then renamed over it: whenever this process dies, the
// file holds the old state or the new one, never part of one.
bool save_state(const std::string& path, const json& state) {
  const std::string temp = path + ".tmp";
  const std::string text = state.dump(2) + "\n";
  FILE* f = std::fopen(temp.c_str(), "w");
  if (!f) return false;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 &&
            ::fsync(::fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  return ok && std::rename(temp.c_str(), path.c_str()) == 0;
}

int run(int argc, char** argv) {
  const int key_token = argc == 3 ? std::atoi(argv[2]) : 0;
  if (key_token < 1) {
    std::cerr << "usage: natsfleet-example-fencing-sink STATE_FILE KEY_TOKEN\n";
    return 2;
  }
  const std::string state_path = argv[1];
  json state = load_state(state_path);
  uint64_t fenced = 0;

  for (std::string line; std::getline(std::cin, line);) {
    const json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("id")) {
      std::cerr << "fencing-sink: not a record: " << line << "\n";
      continue;
    }
    const json& id = record["id"];
    json answer = {{"id", id}, {"result", "ack"}};
    const std::string key = subject_token(record.value("subject", ""), key_token);
    const json seq = record.value("stream_seq", json());
    if (key.empty() || !seq.is_number_unsigned()) {
      // Not ordered work's record, or the wrong key_token: a mistake no redelivery mends.
      answer = {{"id", id}, {"result", "term"}, {"error", "no key or stream_seq"}};
    } else if (state.contains(key) && seq <= state.at(key).at("stream_seq")) {
      ++fenced;
      std::cerr << "fencing-sink: key " << key << ": stream_seq " << seq << " is not above "
                << state.at(key).at("stream_seq") << ", ignored (" << fenced << " fenced)\n";
    } else {
      json next = state;
      next[key] = {{"data", record.value("data", "")}, {"stream_seq", seq}};
      if (save_state(state_path, next))
        state = std::move(next);
      else  // the disk is the downstream: natsfleet holds the message and tries again
        answer = {{"id", id}, {"result", "retry"}, {"error", "cannot write state"}};
    }
    std::cout << answer.dump() << std::endl;  // one answer a line, flushed
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a damaged state file, a record of the wrong shape
    std::cerr << "fencing-sink: " << e.what() << "\n";
    return 1;  // natsfleet restarts the worker; the message is retried
  }
}
