#pragma once
// The bridge between the engine thread and one HTTP exchange's coroutine.
//
// The engine hands every RequestOutput to a RequestSink on its own thread, and a sink
// must never block it. The exchange's coroutine, on the connection's strand, wants to
// `co_await` the outputs one by one. The bridge joins the two:
//
//   engine thread                         exchange coroutine (strand)
//   sink->on_output(o)                    EngineBridge bridge(strand, abort);
//     lock; queue.push(o); unlock           ids = engine.add(request, bridge.sink());
//     post(strand, wake) once per batch     bridge.track(ids);
//                     \                     while (auto o = co_await bridge.next()) ...
//                      `-> cancels the bridge's timer, which next() waits on
//
// The engine thread only takes a mutex for a push and posts at most one wake-up per
// empty-to-non-empty transition, so it never waits for the network. Outputs come out in
// the order the engine produced them; with several ids on one sink (n completions, or
// several prompts) each id's outputs stay in order.
//
// Several ids share one bridge; next() returns nullopt once each of them has delivered
// its last output (finish != kNone). abort_all() (thread-safe, e.g. from the exchange's
// disconnect callback on an I/O thread) aborts every tracked id, and every id tracked
// later, so a client that leaves frees its KV blocks within one engine step.
//
// Lifetimes: the sink may outlive the bridge (the engine keeps it until a request's last
// output); once the bridge is gone, outputs are dropped and no wake-up is posted. Wake-ups
// already posted hold only the shared queue, never an I/O object, so they may safely run
// or be destroyed after the bridge. The strand's io_context must outlive every wake-up
// posted to it: shut the engine down before destroying the server's io_context.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "engine/request_output.h"

namespace pagoda::server {

namespace asio = boost::asio;

class EngineBridge {
 public:
  // Ends one request at the engine (Engine::abort); called from any thread.
  using AbortFunction = std::function<void(engine::RequestId)>;

  // `strand`: the executor the consuming coroutine runs on (the exchange's strand).
  EngineBridge(asio::any_io_executor strand, AbortFunction abort);
  ~EngineBridge();  // detaches the sink: later outputs are dropped
  EngineBridge(const EngineBridge&) = delete;
  EngineBridge& operator=(const EngineBridge&) = delete;

  // The sink to pass to Engine::add (one for every request of the exchange).
  std::shared_ptr<engine::RequestSink> sink() const;

  // Ids whose outputs next() waits for, as Engine::add returned them. Outputs that came
  // before their id was tracked are kept, in order. When abort_all() was called already,
  // the ids are aborted at once.
  void track(std::span<const engine::RequestId> ids);

  // The next output of any tracked id, in the order the engine produced them; nullopt
  // once every tracked id has finished (at once when none is tracked). Call it from the
  // strand, one call at a time. When the calling coroutine is cancelled while it waits
  // (the server stopping), it aborts every id and throws system_error(operation_aborted).
  asio::awaitable<std::optional<engine::RequestOutput>> next();

  // Aborts every tracked id that has not finished, and every id tracked from now on.
  // Thread-safe and idempotent.
  void abort_all();
  // A callable that does abort_all() and stays valid after the bridge is gone (for
  // Exchange::on_disconnect).
  std::function<void()> abort_callback() const;

  bool aborted() const;              // abort_all() was called
  std::size_t n_unfinished() const;  // tracked ids without their last output yet

 private:
  struct State;
  class Sink;

  std::shared_ptr<State> state_;
  std::shared_ptr<Sink> sink_;
  asio::steady_timer wake_timer_;  // next() waits on it; a wake-up cancels it
};

}  // namespace pagoda::server
