#include "broker/embedded_broker.h"

#include <filesystem>
#include <fstream>

namespace natsfleet {

struct EmbeddedBroker::Process {
  broker::NatsServerProcess server;
};

EmbeddedBroker::EmbeddedBroker(EmbeddedBrokerOptions options)
    : options_(std::move(options)), process_(std::make_unique<Process>()) {}

EmbeddedBroker::~EmbeddedBroker() {
  stop();
  if (owns_state_dir_) {
    std::error_code ignored;
    std::filesystem::remove_all(state_dir_, ignored);
  }
}

bool EmbeddedBroker::running() const { return process_->server.pid() > 0; }

std::string EmbeddedBroker::url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

Result<void> EmbeddedBroker::start() {
  if (running()) return {};
  if (state_dir_.empty()) {
    state_dir_ = options_.state_dir;
    if (state_dir_.empty()) {
      auto made = broker::make_temp_directory("natsfleet-broker-");
      if (!made) return made.error();
      state_dir_ = made.value();
      owns_state_dir_ = true;
    }
    std::error_code ec;
    std::filesystem::create_directories(state_dir_ + "/jetstream", ec);
    if (ec)
      return Result<void>(Errc::invalid_argument, "cannot create broker state directory " +
                                                      state_dir_ + ": " + ec.message());
  }
  if (port_ == 0) port_ = options_.port > 0 ? options_.port : broker::free_loopback_port();

  broker::NatsServerCommand command;
  command.executable = options_.executable;
  command.args = {"--jetstream", "--store_dir", state_dir_ + "/jetstream", "--addr",
                  "127.0.0.1",   "--port",      std::to_string(port_),     "--log",
                  log_file()};
  if (!options_.mappings.empty()) {
    // Mappings have no command-line flag: a config file holds them, the flags the rest.
    const std::string conf = state_dir_ + "/nats-server.conf";
    std::ofstream out(conf, std::ios::trunc);
    out << "mappings {\n";
    for (const auto& [source, destination] : options_.mappings)
      out << "  \"" << source << "\": \"" << destination << "\"\n";
    out << "}\n";
    out.close();
    if (!out) return Result<void>(Errc::invalid_argument, "cannot write broker config " + conf);
    command.args.insert(command.args.begin(), {"--config", conf});
  }
  command.log_file = log_file();
  auto& server = process_->server;
  if (auto spawned = server.spawn(command); !spawned) return spawned;
  auto ready =
      server.wait_ready([this] { return broker::greets_client(port_); }, options_.ready_timeout);
  if (!ready) {
    server.kill();
    return ready;
  }
  return {};
}

void EmbeddedBroker::stop() { process_->server.stop(std::chrono::seconds(5)); }

void EmbeddedBroker::kill() { process_->server.kill(); }

}  // namespace natsfleet
