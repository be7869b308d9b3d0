// What `natsfleet dead-letters list` prints: per subject, an aligned table for people or, for
// scripts, one JSON object. Only the Natsfleet-* facts and the data's size are shown, never the
// original message's headers or data: they may hold secrets.
//
//   mail.dead: 1 dead letter in stream MAIL_DEAD_LETTERS
//   SEQ  DEAD-LETTERED AT          SUBSCRIPTION  ORIGIN SUBJECT  ORIGIN   DELIVERIES  BYTES  REASON
//   1    2026-11-29T21:49:45.123Z  mail-relay    mail.outgoing   MAIL:42  5           118    http
//   422
#pragma once

#include <string>
#include <vector>

#include "deadletters/dead_letter_entry.h"

namespace natsfleet::deadletters {

// The dead letters one subject holds.
struct Listing {
  std::string subject;
  std::string stream;
  std::vector<DeadLetterEntry> entries;
};

std::string render_table(const std::vector<Listing>& listings);

// {"subjects":[{"subject":..,"stream":..,"count":N,"dead_letters":[{"seq":1,"time":..,
// "stored_at":..,"subscription":..,"origin_subject":..,"origin_stream":..,"origin_seq":42,
// "deliveries":5,"reason":..,"bytes":118}]}]}; a number the headers do not hold is null.
std::string render_json(const std::vector<Listing>& listings);

// RFC 3339 with at most milliseconds: "2026-11-29T21:49:45.123456789Z" -> "...45.123Z".
std::string short_time(const std::string& rfc3339);

}  // namespace natsfleet::deadletters
