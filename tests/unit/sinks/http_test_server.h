// A small HTTP/1.1 server on a free 127.0.0.1 port for the http sink's tests, written on raw
// sockets (and OpenSSL for https) so it shares no code with the client under test. Each request
// is answered by a handler; a reply can also hang (never answer) or drop the connection.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace natsfleet::sinks::testing {

struct SeenRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string server_name;  // SNI, for https
  int connection = 0;       // which accepted connection carried it (1, 2, ...)
};

struct CannedReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body = "ok";
  bool hang = false;  // never answer; the connection stays open until the server stops
  bool drop = false;  // close the connection without answering
};

class TestHttpServer {
 public:
  using Handler = std::function<CannedReply(const SeenRequest&)>;

  // With `tls` (not owned, must outlive the server) the server speaks https.
  explicit TestHttpServer(Handler handler, SSL_CTX* tls = nullptr)
      : handler_(std::move(handler)), tls_(tls) {
    // SSL_write to a client that already hung up raises SIGPIPE, which would end the test
    // process; the daemon ignores it the same way.
    ::signal(SIGPIPE, SIG_IGN);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("test http server: cannot listen");
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~TestHttpServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
      released_.notify_all();
    }
    acceptor_.join();
    for (auto& t : workers_) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<SeenRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int connections() const { return connections_; }

 private:
  void accept_loop() {
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (stopping_) return;
      }
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      open_fds_.insert(fd);
      const int number = ++connections_;
      workers_.emplace_back([this, fd, number] { serve(fd, number); });
    }
  }

  void serve(int fd, int number) {
    SSL* ssl = nullptr;
    std::string server_name;
    if (tls_) {
      ssl = SSL_new(tls_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) != 1) {
        finish(fd, ssl);
        return;
      }
      if (const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) server_name = name;
    }
    auto receive = [&](char* buf, size_t size) -> ssize_t {
      if (ssl) return SSL_read(ssl, buf, static_cast<int>(size));
      return ::recv(fd, buf, size, 0);
    };
    auto send_all = [&](const std::string& data) {
      size_t sent = 0;
      while (sent < data.size()) {
        const ssize_t n =
            ssl ? SSL_write(ssl, data.data() + sent, static_cast<int>(data.size() - sent))
                : ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<size_t>(n);
      }
    };
    std::string buffer;
    char chunk[16384];
    for (;;) {
      // Headers, then a Content-Length body.
      size_t header_end;
      while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = receive(chunk, sizeof chunk);
        if (n <= 0) return finish(fd, ssl);
        buffer.append(chunk, static_cast<size_t>(n));
      }
      SeenRequest request = parse_head(buffer.substr(0, header_end));
      request.server_name = server_name;
      request.connection = number;
      buffer.erase(0, header_end + 4);
      const size_t length =
          std::stoul(request.headers.count("content-length") ? request.headers["content-length"]
                                                             : std::string("0"));
      while (buffer.size() < length) {
        const ssize_t n = receive(chunk, sizeof chunk);
        if (n <= 0) return finish(fd, ssl);
        buffer.append(chunk, static_cast<size_t>(n));
      }
      request.body = buffer.substr(0, length);
      buffer.erase(0, length);
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      CannedReply reply = handler_(request);
      if (reply.drop) return finish(fd, ssl);
      if (reply.hang) {
        std::unique_lock lock(mu_);
        released_.wait(lock, [this] { return stopping_; });
        lock.unlock();
        return finish(fd, ssl);
      }
      std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " Canned\r\n";
      for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
      out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n\r\n" + reply.body;
      send_all(out);
    }
  }

  void finish(int fd, SSL* ssl) {
    if (ssl) SSL_free(ssl);
    std::lock_guard lock(mu_);
    open_fds_.erase(fd);
    ::close(fd);
  }

  static SeenRequest parse_head(const std::string& head) {
    SeenRequest request;
    size_t line_end = head.find("\r\n");
    const std::string first = head.substr(0, line_end);
    const size_t space = first.find(' ');
    request.method = first.substr(0, space);
    request.target = first.substr(space + 1, first.rfind(' ') - space - 1);
    while (line_end != std::string::npos) {
      const size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      request.headers[name] = value;
    }
    return request;
  }

  Handler handler_;
  SSL_CTX* tls_;
  int listen_fd_ = -1;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable released_;
  bool stopping_ = false;
  std::set<int> open_fds_;
  std::vector<SeenRequest> requests_;
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

// A throwaway self-signed certificate, made in memory, with a server context using it and the
// certificate written to `ca_path` for the client to trust. `names` is its subjectAltName.
class SelfSignedTls {
 public:
  explicit SelfSignedTls(const std::string& ca_path,
                         const std::string& names = "DNS:localhost,IP:127.0.0.1") {
    key_ = EVP_EC_gen("P-256");
    cert_ = X509_new();
    X509_set_version(cert_, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert_), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert_), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert_), 3600);
    X509_set_pubkey(cert_, key_);
    X509_NAME* name = X509_get_subject_name(cert_);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert_, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert_, cert_, nullptr, nullptr, 0);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, names.c_str());
    X509_add_ext(cert_, san, -1);
    X509_EXTENSION_free(san);
    if (X509_sign(cert_, key_, EVP_sha256()) <= 0)
      throw std::runtime_error("test certificate: signing failed");
    FILE* f = std::fopen(ca_path.c_str(), "w");
    if (!f) throw std::runtime_error("test certificate: cannot write " + ca_path);
    PEM_write_X509(f, cert_);
    std::fclose(f);
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx_, cert_);
    SSL_CTX_use_PrivateKey(ctx_, key_);
  }
  ~SelfSignedTls() {
    SSL_CTX_free(ctx_);
    X509_free(cert_);
    EVP_PKEY_free(key_);
  }
  SSL_CTX* server_context() const { return ctx_; }

 private:
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  SSL_CTX* ctx_ = nullptr;
};

}  // namespace natsfleet::sinks::testing
