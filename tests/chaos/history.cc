#include "chaos/history.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace natsfleet::chaos {
namespace {

using nlohmann::json;

template <typename T, typename ToJson>
void write_lines(const std::string& path, const std::vector<T>& items, ToJson to_json) {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& item : items) out << to_json(item).dump() << '\n';
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

template <typename FromJson>
void read_lines(const std::string& path, FromJson from_json) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    auto doc = json::parse(line, nullptr, false);
    if (!doc.is_object())
      throw std::runtime_error(path + ":" + std::to_string(number) + ": not a JSON object");
    from_json(doc);
  }
}

}  // namespace

void write_history(const std::string& dir, const History& h) {
  {
    std::ofstream out(dir + "/run.json", std::ios::trunc);
    out << json{{"seed", h.seed},
                {"replicas", h.replicas},
                {"ack_wait_ms", h.ack_wait_ms},
                {"heartbeat_ms", h.heartbeat_ms},
                {"retry_max_ms", h.retry_max_ms},
                {"keys", h.keys},
                {"faults_end_ms", h.faults_end_ms},
                {"end_ms", h.end_ms},
                {"unreadable_lines", h.unreadable_lines}}
               .dump(2)
        << '\n';
    if (!out) throw std::runtime_error("cannot write " + dir + "/run.json");
  }
  write_lines(dir + "/publishes.jsonl", h.publishes, [](const PublishRecord& p) {
    json j{{"id", p.id},   {"sent_ms", p.sent_ms}, {"acked", p.acked},
           {"seq", p.seq}, {"ack_ms", p.ack_ms},   {"attempts", p.attempts}};
    if (!p.error.empty()) j["error"] = p.error;
    return j;
  });
  write_lines(dir + "/handled.jsonl", h.handlings, [](const HandlingRecord& r) {
    json j{{"id", r.id},
           {"replica", r.replica},
           {"delivered", r.delivered},
           {"seq", r.seq},
           {"at_ms", r.at_ms},
           {"partition", r.partition ? json(*r.partition) : json()},
           {"epoch", r.epoch ? json(*r.epoch) : json()}};
    if (r.absent_ms >= 0) j["absent_ms"] = r.absent_ms;
    return j;
  });
  write_lines(dir + "/faults.jsonl", h.faults, [](const FaultRecord& f) {
    return json{
        {"kind", f.kind}, {"target", f.target}, {"start_ms", f.start_ms}, {"end_ms", f.end_ms}};
  });
  write_lines(dir + "/readiness.jsonl", h.readiness, [](const ReadySample& s) {
    return json{{"replica", s.replica}, {"at_ms", s.at_ms}, {"ready", s.ready}};
  });
  write_lines(dir + "/dead_letters.jsonl", h.dead_lettered, [](int64_t id) {
    return json{{"id", id}};
  });
  write_lines(dir + "/broker_lost.jsonl", h.broker_lost, [](int64_t id) {
    return json{{"id", id}};
  });
}

History read_history(const std::string& dir) {
  History h;
  {
    std::ifstream in(dir + "/run.json");
    auto run = json::parse(in, nullptr, false);
    if (!run.is_object()) throw std::runtime_error("cannot read " + dir + "/run.json");
    h.seed = run.value("seed", uint64_t{0});
    h.replicas = run.value("replicas", 0);
    h.ack_wait_ms = run.value("ack_wait_ms", 0.0);
    h.heartbeat_ms = run.value("heartbeat_ms", 1000.0);
    h.retry_max_ms = run.value("retry_max_ms", 0.0);
    h.keys = run.value("keys", 0);
    h.faults_end_ms = run.value("faults_end_ms", 0.0);
    h.end_ms = run.value("end_ms", 0.0);
    h.unreadable_lines = run.value("unreadable_lines", size_t{0});
  }
  read_lines(dir + "/publishes.jsonl", [&](const json& j) {
    PublishRecord p;
    p.id = j.value("id", int64_t{0});
    p.sent_ms = j.value("sent_ms", 0.0);
    p.acked = j.value("acked", false);
    p.seq = j.value("seq", uint64_t{0});
    p.ack_ms = j.value("ack_ms", 0.0);
    p.attempts = j.value("attempts", 0);
    p.error = j.value("error", "");
    h.publishes.push_back(p);
  });
  read_lines(dir + "/handled.jsonl", [&](const json& j) {
    HandlingRecord r;
    r.id = j.value("id", int64_t{0});
    r.replica = j.value("replica", 0);
    r.delivered = j.value("delivered", 0);
    r.seq = j.value("seq", uint64_t{0});
    r.at_ms = j.value("at_ms", 0.0);
    r.absent_ms = j.value("absent_ms", -1.0);
    if (auto p = j.find("partition"); p != j.end() && p->is_number_integer())
      r.partition = p->get<int>();
    if (auto e = j.find("epoch"); e != j.end() && e->is_number_unsigned())
      r.epoch = e->get<uint64_t>();
    h.handlings.push_back(r);
  });
  read_lines(dir + "/faults.jsonl", [&](const json& j) {
    h.faults.push_back(FaultRecord{j.value("kind", ""), j.value("target", ""),
                                   j.value("start_ms", 0.0), j.value("end_ms", 0.0)});
  });
  read_lines(dir + "/readiness.jsonl", [&](const json& j) {
    h.readiness.push_back(
        ReadySample{j.value("replica", 0), j.value("at_ms", 0.0), j.value("ready", false)});
  });
  read_lines(dir + "/dead_letters.jsonl",
             [&](const json& j) { h.dead_lettered.push_back(j.value("id", int64_t{0})); });
  if (std::ifstream(dir + "/broker_lost.jsonl"))  // absent in runs from before it was kept
    read_lines(dir + "/broker_lost.jsonl",
               [&](const json& j) { h.broker_lost.push_back(j.value("id", int64_t{0})); });
  return h;
}

}  // namespace natsfleet::chaos
