// The one helper every printed URL and error goes through: passwords, tokens and query values
// never reach a log line, /status, an audit or a lint finding.
#include "natsfleet/redact.h"

#include <gtest/gtest.h>

#include <string>

namespace natsfleet {
namespace {

struct RedactCase {
  std::string in;
  std::string out;
};

TEST(Redact, UrlsKeepWhereAndLoseSecrets) {
  for (const RedactCase& c : {
           RedactCase{"nats://alice:pw@broker:4222", "nats://alice:***@broker:4222"},
           RedactCase{"nats://tok3n@broker:4222", "nats://***@broker:4222"},
           RedactCase{"tls://u:p:q@[::1]:4222", "tls://u:***@[::1]:4222"},
           RedactCase{"nats://u:p@ss@h", "nats://u:***@h"},
           RedactCase{"nats://u:pa/ss@h:1", "nats://u:***@h:1"},
           RedactCase{"https://h/hook?token=abc&x=1", "https://h/hook?token=***&x=***"},
           RedactCase{"https://h/hook?abc", "https://h/hook?***"},
           RedactCase{"https://b:pw@h:8080/p?t=1#access_token=z",
                      "https://b:***@h:8080/p?t=***#access_token=***"},
           RedactCase{"http://127.0.0.1:8080/status", "http://127.0.0.1:8080/status"},
           RedactCase{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
           // Found by fuzz_duration_url: an '@' in the path is not a userinfo's end; the
           // redacted URL named host "ks4ms" instead of "h".
           RedactCase{"https://h/hoo@ks4ms?token=abc", "https://h/hoo@ks4ms?token=***"},
           RedactCase{"https://h:8080/@scope/pkg", "https://h:8080/@scope/pkg"},
           RedactCase{"http://[::1]/a:b@c", "http://[::1]/a:b@c"},
           RedactCase{"nats://u:pa/ss@h:1/x", "nats://u:***@h:1/x"},
           RedactCase{"not a url", "not a url"},
           RedactCase{"", ""},
       })
    EXPECT_EQ(redact_url(c.in), c.out) << c.in;
}

TEST(Redact, FreeTextRedactsEveryUrlInIt) {
  EXPECT_EQ(redact("cannot reach nats://a:pw@h:1: refused; nats://tok@g:2: refused"),
            "cannot reach nats://a:***@h:1: refused; nats://***@g:2: refused");
  EXPECT_EQ(redact("'nats://a:pw@h:99999' is not a nats:// or tls:// URL"),
            "'nats://a:***@h:99999' is not a nats:// or tls:// URL");
  EXPECT_EQ(redact(R"({"error":"POST http://b:pw@h/x?token=t: 503"})"),
            R"({"error":"POST http://b:***@h/x?token=***: 503"})");
  EXPECT_EQ(redact("no url here: just words"), "no url here: just words");
  EXPECT_EQ(redact("://@"), "://***@");
  EXPECT_EQ(redact_urls({"nats://a:b@h", "nats://h2"}), "nats://a:***@h, nats://h2");
}

}  // namespace
}  // namespace natsfleet
