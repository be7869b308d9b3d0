#include "fleet/ordered/partition_plan.h"

#include <vector>

#include "base/fnv_hash.h"
#include "base/parse_number.h"
#include "base/subject_tokens.h"
#include "natsfleet/validate.h"

namespace natsfleet::fleet {

Result<PartitionPlan> PartitionPlan::of(const WorkSpec& spec) {
  if (!spec.per_key)
    return Result<PartitionPlan>(Errc::invalid_argument,
                                 "work " + spec.name + " has no per-key order");
  return make(spec.subject, spec.per_key->key_token, spec.per_key->partitions);
}

Result<PartitionPlan> PartitionPlan::make(std::string_view subject, int key_token, int partitions) {
  using R = Result<PartitionPlan>;
  if (auto ok = check_subject(subject); !ok) return ok.error();
  if (partitions < 1 || partitions > Limits::kMaxPartitions)
    return R(Errc::invalid_argument, "partitions must be between 1 and " +
                                         std::to_string(Limits::kMaxPartitions) + ", got " +
                                         std::to_string(partitions));
  const auto tokens = base::subject_tokens(subject);
  const int count = static_cast<int>(tokens.size());
  if (key_token < 1 || key_token > count)
    return R(Errc::invalid_argument, "key_token " + std::to_string(key_token) +
                                         " must name one of the " + std::to_string(count) +
                                         " tokens of subject '" + std::string(subject) + "'");
  if (tokens[key_token - 1] != "*")
    return R(Errc::invalid_argument,
             "key_token " + std::to_string(key_token) + " of subject '" + std::string(subject) +
                 "' is '" + std::string(tokens[key_token - 1]) +
                 "': the key must be a '*' token, so that each key is a subject of its own");
  PartitionPlan plan;
  plan.source_ = subject;
  plan.key_token_ = key_token;
  plan.partitions_ = partitions;
  const bool tail = tokens.back() == ">";
  plan.partition_token_ = tail ? count : count + 1;
  // Destination: every `*` as {{wildcard(i)}}, the partition before a trailing `>`.
  std::vector<std::string> destination;
  int wildcard = 0, key_wildcard = 0;
  for (int i = 0; i < count; ++i) {
    if (tokens[i] == "*") {
      ++wildcard;
      if (i + 1 == key_token) key_wildcard = wildcard;
      destination.push_back("{{wildcard(" + std::to_string(wildcard) + ")}}");
    } else if (tokens[i] != ">") {
      destination.emplace_back(tokens[i]);
    }
  }
  destination.push_back("{{partition(" + std::to_string(partitions) + "," +
                        std::to_string(key_wildcard) + ")}}");
  if (tail) destination.emplace_back(">");
  for (const auto& t : destination) {
    if (!plan.destination_.empty()) plan.destination_ += '.';
    plan.destination_ += t;
  }
  plan.stored_ = plan.with_token("*");
  return plan;
}

std::string PartitionPlan::with_token(std::string_view token) const {
  auto tokens = base::subject_tokens(source_);
  tokens.insert(tokens.begin() + (partition_token_ - 1), token);
  return base::join_subject(tokens);
}

std::string PartitionPlan::mapping_line() const {
  return "\"" + source_ + "\": \"" + destination_ + "\"";
}

std::string PartitionPlan::filter(int partition) const {
  return with_token(std::to_string(partition));
}

int PartitionPlan::partition_of(std::string_view key) const {
  return static_cast<int>(base::fnv1a_32(key) % static_cast<uint32_t>(partitions_));
}

std::string PartitionPlan::mapped(std::string_view published) const {
  auto tokens = base::subject_tokens(published);
  const std::string partition = std::to_string(
      partition_of(tokens.size() >= static_cast<size_t>(key_token_) ? tokens[key_token_ - 1]
                                                                    : std::string_view{}));
  const size_t at = std::min(tokens.size(), static_cast<size_t>(partition_token_ - 1));
  tokens.insert(tokens.begin() + static_cast<std::ptrdiff_t>(at), partition);
  return base::join_subject(tokens);
}

int PartitionPlan::partition_in(std::string_view stored) const {
  const auto tokens = base::subject_tokens(stored);
  if (tokens.size() < static_cast<size_t>(partition_token_)) return -1;
  const auto value = base::parse_number<int>(tokens[partition_token_ - 1]);
  return value && *value >= 0 && *value < partitions_ ? *value : -1;
}

std::string partition_consumer(std::string_view name, int partition) {
  return std::string(name) + "-p" + std::to_string(partition);
}

namespace {
constexpr std::string_view kPartitionMark = " (per-key order, natsfleet)";
}

std::string partition_description(std::string_view name, int partition) {
  return "partition " + std::to_string(partition) + " of " + std::string(name) +
         std::string(kPartitionMark);
}

}  // namespace natsfleet::fleet
