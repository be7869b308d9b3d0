// Whether one subject pattern lies within another: which stream holds a work's subject (the
// audit, from stream infos already read), whether a declared stream holds it (validate_work).
//
//   subject_within("mail.outgoing", "mail.>")   // true: every such message lands in the stream
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace natsfleet::base {

// True when every subject `subject` can match is also matched by `pattern`. Both may hold
// wildcards ('*' one token, '>' the rest): "a.*" is within "a.>", "a.>" is not within "a.*".
bool subject_within(std::string_view subject, std::string_view pattern);

// True when `subject` is within one of `patterns` (a stream's subjects).
bool subject_within_any(std::string_view subject, const std::vector<std::string>& patterns);

}  // namespace natsfleet::base
