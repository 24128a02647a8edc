#pragma once
// Writing and closing for the transport's connections (internal): the error replies
// the transport sends itself, and the lingering close that keeps a reply from being
// destroyed by a reset.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "server/http/http_server_connection.h"

namespace pagoda::server {

constexpr std::size_t kReadChunkBytes = 16 << 10;  // bytes asked of one socket read

// A JSON error reply in OpenAI's shape that closes the connection.
http::response<http::string_body> error_response(const ApiError& error, unsigned version,
                                                 const std::string& request_id);

// Half-closes the connection, then reads and drops what the client still sends (for at
// most 1 s, or `read_timeout` if shorter, and 1 MiB) before closing: closing a socket
// with unread bytes sends a reset that can destroy the reply before the client reads it
// (RFC 9112 9.6).
asio::awaitable<void> close_gracefully(TcpStream& stream, std::chrono::milliseconds read_timeout);

}  // namespace pagoda::server
