#include "server/metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/metrics/metrics_process.h"

namespace pagoda::server {
namespace {

// A strict reader of the text exposition format, independent of the writer: every line
// is a HELP, a TYPE, or a sample of the family announced last.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram
  std::map<std::string, std::string> helps;
  std::vector<Sample> samples;

  // The value of the one sample with this name and these labels; fails the test if none.
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const Sample& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    ADD_FAILURE() << "no sample " << name;
    return std::nan("");
  }
  std::vector<Sample> series(const std::string& name) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name == name) out.push_back(s);
    }
    return out;
  }
};

double parse_number(const std::string& text) {
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  EXPECT_EQ(*end, '\0') << "not a number: " << text;
  return v;
}

// Reads `{a="x",b="y\"z"}` starting at line[pos] == '{'; returns the position after '}'.
size_t parse_labels(const std::string& line, size_t pos, std::map<std::string, std::string>& out) {
  ++pos;
  while (pos < line.size() && line[pos] != '}') {
    const size_t eq = line.find('=', pos);
    EXPECT_NE(eq, std::string::npos) << line;
    const std::string name = line.substr(pos, eq - pos);
    EXPECT_TRUE(is_valid_label_name(name)) << name;
    EXPECT_EQ(line.at(eq + 1), '"') << line;
    std::string value;
    size_t i = eq + 2;
    for (; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\') {
        const char next = line.at(++i);
        EXPECT_TRUE(next == '\\' || next == '"' || next == 'n') << line;
        value += next == 'n' ? '\n' : next;
      } else {
        value += line[i];
      }
    }
    EXPECT_TRUE(out.emplace(name, value).second) << "label twice: " << line;
    pos = i + 1;
    if (pos < line.size() && line[pos] == ',') ++pos;
  }
  return pos + 1;
}

bool belongs_to(const std::string& sample, const std::string& family, const std::string& type) {
  if (sample == family) return type != "histogram";
  if (type != "histogram") return false;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    if (sample == family + suffix) return true;
  }
  return false;
}

Exposition parse_exposition(const std::string& text) {
  Exposition out;
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  std::istringstream in(text);
  std::string line;
  std::string family;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      const size_t space = line.find(' ', 7);
      family = line.substr(7, space - 7);
      EXPECT_TRUE(out.helps.emplace(family, line.substr(space + 1)).second) << "HELP twice: " << family;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      const size_t space = line.find(' ', 7);
      EXPECT_EQ(line.substr(7, space - 7), family) << "TYPE without its HELP";
      EXPECT_TRUE(out.types.emplace(family, line.substr(space + 1)).second);
    } else {
      Sample s;
      const size_t name_end = line.find_first_of("{ ");
      s.name = line.substr(0, name_end);
      EXPECT_TRUE(is_valid_metric_name(s.name)) << line;
      EXPECT_TRUE(belongs_to(s.name, family, out.types[family])) << line << " in " << family;
      size_t pos = name_end;
      if (line[pos] == '{') pos = parse_labels(line, pos, s.labels);
      EXPECT_EQ(line.at(pos), ' ') << line;
      s.value = parse_number(line.substr(pos + 1));
      out.samples.push_back(std::move(s));
    }
  }
  return out;
}

// Checks what Prometheus requires of a histogram series and returns its count.
double check_histogram(const Exposition& e, const std::string& name, size_t n_bounds) {
  const std::vector<Sample> buckets = e.series(name + "_bucket");
  EXPECT_EQ(buckets.size(), n_bounds + 1);
  double previous_le = -INFINITY;
  double previous_count = 0;
  for (const Sample& b : buckets) {
    const double le = parse_number(b.labels.at("le"));
    EXPECT_LT(previous_le, le);
    EXPECT_LE(previous_count, b.value) << name << " le=" << b.labels.at("le");
    previous_le = le;
    previous_count = b.value;
  }
  EXPECT_EQ(buckets.back().labels.at("le"), "+Inf");
  EXPECT_EQ(e.value(name + "_count"), buckets.back().value);
  return buckets.back().value;
}

TEST(MetricsText, FormatsNumbersPrometheusReadsBackExactly) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(12), "12");
  EXPECT_EQ(format_metric_value(-3), "-3");
  EXPECT_EQ(format_metric_value(0.25), "0.25");
  EXPECT_EQ(format_metric_value(1e-05), "1e-05");
  EXPECT_EQ(format_metric_value(INFINITY), "+Inf");
  EXPECT_EQ(format_metric_value(-INFINITY), "-Inf");
  EXPECT_EQ(format_metric_value(NAN), "NaN");
  for (double v : {0.1, 1.0 / 3.0, 123456789.125, 6.02e23, 2.5e-300, 9007199254740993.0}) {
    EXPECT_EQ(parse_number(format_metric_value(v)), v) << format_metric_value(v);
  }
}

TEST(MetricsText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_help_text("x\\y\n\"z\""), "x\\\\y\\n\"z\"");
  ExpositionWriter out;
  out.begin_family("t_total", "help", MetricType::kCounter);
  out.sample("t_total", {"path"}, {"/a\"b\\c\nd"}, 1);
  const Exposition e = parse_exposition(out.text());
  EXPECT_EQ(e.value("t_total", {{"path", "/a\"b\\c\nd"}}), 1);
}

TEST(MetricsText, ValidatesNames) {
  EXPECT_TRUE(is_valid_metric_name("pagoda_requests_total"));
  EXPECT_TRUE(is_valid_metric_name("ns:metric_1"));
  EXPECT_FALSE(is_valid_metric_name("1abc"));
  EXPECT_FALSE(is_valid_metric_name("a-b"));
  EXPECT_FALSE(is_valid_metric_name(""));
  EXPECT_TRUE(is_valid_label_name("le"));
  EXPECT_FALSE(is_valid_label_name("__name__"));
  EXPECT_FALSE(is_valid_label_name("a:b"));
}

TEST(MetricsCore, CounterAndGauge) {
  Counter c;
  c.inc();
  c.inc(2.5);
  c.inc(-4);   // ignored: counters never go down
  c.inc(NAN);  // ignored
  EXPECT_EQ(c.value(), 3.5);
  Gauge g;
  g.set(7);
  g.add(-2.5);
  EXPECT_EQ(g.value(), 4.5);
}

TEST(MetricsCore, HistogramBucketsAreInclusiveAndCumulative) {
  Histogram h({10.0, 0.1, 1.0, 1.0, INFINITY});  // sorted, deduplicated, +Inf implicit
  ASSERT_EQ(h.bounds(), (std::vector<double>{0.1, 1.0, 10.0}));
  for (double v : {0.05, 0.1, 0.5, 10.0, 11.0, double(NAN)}) h.observe(v);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(s.count(), 5u);
  EXPECT_DOUBLE_EQ(s.sum, 0.05 + 0.1 + 0.5 + 10.0 + 11.0);

  ExpositionWriter out;
  out.begin_family("lat_seconds", "Latency.", MetricType::kHistogram);
  out.histogram("lat_seconds", {"route"}, {"/x"}, s);
  EXPECT_EQ(out.text(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{route=\"/x\",le=\"1\"} 3\n"
            "lat_seconds_bucket{route=\"/x\",le=\"10\"} 4\n"
            "lat_seconds_bucket{route=\"/x\",le=\"+Inf\"} 5\n"
            "lat_seconds_sum{route=\"/x\"} 21.65\n"
            "lat_seconds_count{route=\"/x\"} 5\n");
}

TEST(MetricsCore, ChecksBucketBounds) {
  EXPECT_TRUE(check_bucket_bounds({0.1, 1}).ok());
  EXPECT_FALSE(check_bucket_bounds({}).ok());
  EXPECT_FALSE(check_bucket_bounds({1, 1}).ok());
  EXPECT_FALSE(check_bucket_bounds({2, 1}).ok());
  EXPECT_FALSE(check_bucket_bounds({1, INFINITY}).ok());
  EXPECT_TRUE(check_bucket_bounds(ttft_buckets()).ok());
  EXPECT_TRUE(check_bucket_bounds(tpot_buckets()).ok());
  EXPECT_TRUE(check_bucket_bounds(request_latency_buckets()).ok());
}

TEST(MetricsCore, FamilyBoundsItsSeries) {
  Family<Counter> family({"endpoint"}, [] { return std::make_unique<Counter>(); }, 2);
  family.with({"/a"}).inc();
  family.with({"/b"}).inc();
  family.with({"/c"}).inc();  // a third label set: counted as "other"
  family.with({"/d"}).inc(2);
  family.with({"/a"}).inc();  // known ones keep their series
  std::map<std::string, double> seen;
  family.for_each([&](const LabelValues& v, const Counter& c) { seen[v.at(0)] = c.value(); });
  EXPECT_EQ(seen, (std::map<std::string, double>{{"/a", 2}, {"/b", 1}, {"other", 3}}));
}

engine::EngineStats sample_stats() {
  engine::EngineStats stats;
  stats.n_running = 3;
  stats.n_waiting = 5;
  stats.kv_usage = 0.375;
  stats.n_kv_blocks = 1024;
  stats.prefix_cache.queries = 9;
  stats.prefix_cache.queried_tokens = 4000;
  stats.prefix_cache.hit_tokens = 1536;
  stats.scheduler.n_preemptions = 2;
  stats.n_cached_kv_blocks = 300;
  stats.n_kv_evictions = 42;
  return stats;
}

TEST(ServerMetrics, RendersEverySeriesAsRecorded) {
  ServerMetrics metrics;
  metrics.record_request("/v1/chat/completions", 200);
  metrics.record_request("/v1/chat/completions", 200);
  metrics.record_request("/v1/completions", 400);
  metrics.record_finish("stop");
  metrics.record_finish("length");
  metrics.record_finish("length");
  metrics.record_tokens(128, 64);
  metrics.record_tokens(10, 5);
  metrics.observe_ttft(0.03);
  metrics.observe_ttft(3.0);
  metrics.observe_tpot(0.02);
  metrics.observe_e2e(1.2);
  metrics.observe_queue_time(0.0);
  metrics.set_model_load_seconds(1.25);
  EXPECT_EQ(metrics.requests_served(), 3);

  const Exposition e = parse_exposition(metrics.render(sample_stats()));
  EXPECT_EQ(e.value("pagoda_requests_total", {{"endpoint", "/v1/chat/completions"}, {"status", "200"}}), 2);
  EXPECT_EQ(e.value("pagoda_requests_total", {{"endpoint", "/v1/completions"}, {"status", "400"}}), 1);
  EXPECT_EQ(e.value("pagoda_request_finished_total", {{"finish_reason", "length"}}), 2);
  EXPECT_EQ(e.value("pagoda_prompt_tokens_total"), 138);
  EXPECT_EQ(e.value("pagoda_generation_tokens_total"), 69);
  EXPECT_EQ(e.value("pagoda_num_requests_running"), 3);
  EXPECT_EQ(e.value("pagoda_num_requests_waiting"), 5);
  EXPECT_EQ(e.value("pagoda_kv_cache_usage_ratio"), 0.375);
  EXPECT_EQ(e.value("pagoda_kv_cache_blocks"), 1024);
  EXPECT_EQ(e.value("pagoda_prefix_cache_queries_total"), 4000);  // tokens, not lookups
  EXPECT_EQ(e.value("pagoda_prefix_cache_hits_total"), 1536);
  EXPECT_EQ(e.value("pagoda_num_preemptions_total"), 2);
  EXPECT_EQ(e.value("pagoda_kv_cache_cached_blocks"), 300);
  EXPECT_EQ(e.value("pagoda_prefix_cache_evictions_total"), 42);
  EXPECT_EQ(e.value("pagoda_model_load_seconds"), 1.25);
  EXPECT_EQ(e.types.at("pagoda_prefix_cache_evictions_total"), "counter");
  EXPECT_GT(e.value("process_resident_memory_bytes"), 1 << 20);

  EXPECT_EQ(check_histogram(e, "pagoda_time_to_first_token_seconds", ttft_buckets().size()), 2);
  EXPECT_EQ(e.value("pagoda_time_to_first_token_seconds_bucket", {{"le", "0.04"}}), 1);
  EXPECT_EQ(e.value("pagoda_time_to_first_token_seconds_bucket", {{"le", "2.5"}}), 1);
  EXPECT_EQ(e.value("pagoda_time_to_first_token_seconds_bucket", {{"le", "5"}}), 2);
  EXPECT_DOUBLE_EQ(e.value("pagoda_time_to_first_token_seconds_sum"), 3.03);
  EXPECT_EQ(check_histogram(e, "pagoda_time_per_output_token_seconds", tpot_buckets().size()), 1);
  EXPECT_EQ(check_histogram(e, "pagoda_e2e_request_latency_seconds", request_latency_buckets().size()), 1);
  EXPECT_EQ(e.value("pagoda_e2e_request_latency_seconds_bucket", {{"le", "1"}}), 0);
  EXPECT_EQ(e.value("pagoda_e2e_request_latency_seconds_bucket", {{"le", "1.5"}}), 1);
  EXPECT_EQ(check_histogram(e, "pagoda_request_queue_time_seconds", request_latency_buckets().size()), 1);

  EXPECT_EQ(e.types.at("pagoda_requests_total"), "counter");
  EXPECT_EQ(e.types.at("pagoda_num_requests_running"), "gauge");
  EXPECT_EQ(e.types.at("pagoda_e2e_request_latency_seconds"), "histogram");
  EXPECT_EQ(e.types.at("pagoda_prefix_cache_hits_total"), "counter");
  for (const auto& [family, type] : e.types) EXPECT_TRUE(e.helps.count(family)) << family;
}

TEST(ServerMetrics, RendersEmptyFamiliesBeforeAnyRequest) {
  ServerMetrics metrics;
  const Exposition e = parse_exposition(metrics.render({}));
  EXPECT_TRUE(e.series("pagoda_requests_total").empty());
  EXPECT_EQ(e.types.at("pagoda_requests_total"), "counter");
  EXPECT_EQ(check_histogram(e, "pagoda_time_to_first_token_seconds", ttft_buckets().size()), 0);
  EXPECT_EQ(e.value("pagoda_time_to_first_token_seconds_sum"), 0);
}

TEST(ServerMetrics, RecordsFromManyThreadsWhileRendering) {
  ServerMetrics metrics;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        metrics.record_request(i % 2 ? "/v1/completions" : "/v1/chat/completions", 200 + t);
        metrics.record_tokens(2, 1);
        metrics.observe_ttft(0.001 * (i % 1000));
        metrics.observe_e2e(1.0);
      }
      done.fetch_add(1);
    });
  }
  double last_count = 0;
  int renders = 0;
  while (done.load() < kThreads || renders < 3) {
    const Exposition e = parse_exposition(metrics.render({}));
    const double count = check_histogram(e, "pagoda_time_to_first_token_seconds", ttft_buckets().size());
    EXPECT_LE(last_count, count);  // never goes back
    last_count = count;
    ++renders;
  }
  for (std::thread& w : workers) w.join();

  const Exposition e = parse_exposition(metrics.render({}));
  const double total = double(kThreads) * kPerThread;
  EXPECT_EQ(check_histogram(e, "pagoda_time_to_first_token_seconds", ttft_buckets().size()), total);
  EXPECT_EQ(e.value("pagoda_e2e_request_latency_seconds_sum"), total);
  EXPECT_EQ(e.value("pagoda_prompt_tokens_total"), 2 * total);
  EXPECT_EQ(e.value("pagoda_generation_tokens_total"), total);
  double requests = 0;
  for (const Sample& s : e.series("pagoda_requests_total")) requests += s.value;
  EXPECT_EQ(requests, total);
  EXPECT_EQ(e.series("pagoda_requests_total").size(), 2u * kThreads);
  EXPECT_EQ(metrics.requests_served(), kThreads * kPerThread);
}

TEST(MetricsProcess, ParsesStatm) {
  const auto memory = parse_statm("2500 1200 300 10 0 900 0\n", 4096);
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->virtual_bytes, 2500u * 4096);
  EXPECT_EQ(memory->resident_bytes, 1200u * 4096);
  EXPECT_FALSE(parse_statm("", 4096).has_value());
  EXPECT_FALSE(parse_statm("12 x", 4096).has_value());
  const auto self = read_process_memory();
  ASSERT_TRUE(self.has_value());
  EXPECT_GT(self->resident_bytes, 0u);
  EXPECT_GE(self->virtual_bytes, self->resident_bytes);
  EXPECT_GE(process_cpu_seconds(), 0.0);
}

}  // namespace
}  // namespace pagoda::server
