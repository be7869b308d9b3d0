// What libnatsfleet.so exports: the library is built with hidden visibility, so only what the
// public headers mark NATSFLEET_API (and the inline code in them) is its ABI; its internals and
// the Boost, fmt and JSON code it instantiates stay inside it.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define NATSFLEET_API __attribute__((visibility("default")))
#else
#define NATSFLEET_API
#endif
