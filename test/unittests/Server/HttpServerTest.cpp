//===- HttpServerTest.cpp - The HTTP front end's listening socket ---------===//
//
// A burst of clients connecting at once must all complete their TCP
// handshakes even before the server accepts any of them: the listen
// backlog holds them. With cpp-httplib's backlog of 5, the kernel drops
// the handshakes beyond it and clients wait a second to resend.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/HttpServer.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

using namespace folio;
using namespace folio::server;

namespace {

TEST(HttpServer, ListenBacklogHoldsABurstOfConnections) {
  HttpServerOptions options;
  options.port = 0;
  HttpServer server(options, /*engine=*/nullptr, /*tokenizer=*/nullptr,
                    std::make_shared<ServerMetrics>());
  Expected<int> port = server.bind();
  ASSERT_TRUE(port) << port.status().message();

  // Bound and listening, but nothing accepts yet (listen() is not called):
  // every handshake that completes waits in the backlog.
  constexpr int kClients = 32;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(*port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<pollfd> fds;
  for (int i = 0; i < kClients; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    int rc = ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << "connect " << i;
    fds.push_back({fd, POLLOUT, 0});
  }
  // Loopback handshakes take microseconds; a dropped one is resent only
  // after a second.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int connected = 0;
  for (pollfd &p : fds) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now())
                       .count());
    if (::poll(&p, 1, std::max(left, 0)) == 1 && (p.revents & POLLOUT)) {
      int error = 0;
      socklen_t len = sizeof error;
      ::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &error, &len);
      connected += error == 0;
    }
  }
  for (pollfd &p : fds)
    ::close(p.fd);
  EXPECT_EQ(connected, kClients);
}

} // namespace
