#include "chaos/timeline.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "chaos/schedule.h"

namespace natsfleet::chaos {
namespace {

const char* colour_of(const std::string& kind) {
  static const std::map<std::string, const char*> colours = {
      {"replica-kill", "#d62728"},      {"replica-pause", "#ff7f0e"},
      {"replica-partition", "#9467bd"}, {"sink-outage", "#8c564b"},
      {"node-kill", "#1f77b4"},         {"leader-kill", "#17becf"},
      {"node-pause", "#2ca02c"},        {"node-partition", "#e377c2"},
      {"link-delay", "#bcbd22"},        {"consumer-delete", "#7f7f7f"}};
  auto it = colours.find(kind);
  return it == colours.end() ? "#000000" : it->second;
}

bool on_broker_lane(const std::string& kind) {
  return kind.rfind("node-", 0) == 0 || kind.rfind("link-", 0) == 0 || kind == "leader-kill" ||
         kind == "consumer-delete";
}

}  // namespace

std::string write_timeline(const std::string& dir, const History& h, const Verdict& v) {
  {
    std::ofstream data(dir + "/timeline.dat", std::ios::trunc);
    data << "# second acked handled duplicates\n";
    const auto seconds = per_second(h);
    for (size_t s = 0; s < seconds.size(); ++s)
      data << s << ' ' << seconds[s].acked << ' ' << seconds[s].handled << ' '
           << seconds[s].duplicates << '\n';
  }
  std::ofstream gp(dir + "/timeline.gp", std::ios::trunc);
  gp << "set terminal pngcairo size 1600,640 font 'sans,10'\n"
     << "set output '" << dir << "/timeline.png'\n"
     << "set title 'natsfleet chaos, seed " << h.seed << ", " << h.replicas << " replicas: acked "
     << v.acked << ", lost " << v.lost << ", duplicates " << v.duplicates << ", dead-lettered "
     << v.dead_lettered << ", longest stall " << static_cast<long>(v.longest_stall_ms) << " ms, "
     << (v.pass ? "PASS" : "FAIL") << "'\n"
     << "set xlabel 'seconds from start'\nset ylabel 'messages per second'\n"
     << "set y2label 'duplicates per second'\nset ytics nomirror\nset y2tics\n"
     << "set yrange [0:*]\nset y2range [0:*]\nset offsets 0,0,graph 0.35,0\n"
     << "set key below horizontal\nset grid xtics\n"
     << "set xrange [0:" << h.end_ms / 1000 << "]\n";
  int object = 1;
  for (const auto& f : h.faults) {
    const bool broker = on_broker_lane(f.kind);
    const double lo = broker ? 0.89 : 0.79, hi = broker ? 0.98 : 0.88;
    const double end = std::max(f.end_ms, f.start_ms + 150);  // instant faults stay visible
    gp << "set object " << object << " rect from " << f.start_ms / 1000 << ", graph " << lo
       << " to " << end / 1000 << ", graph " << hi << " fc rgb '" << colour_of(f.kind)
       << "' fs solid 0.55 noborder front\n";
    gp << "set label " << object << " '" << f.kind << " " << f.target << "' at "
       << f.start_ms / 1000 << ", graph " << (lo + hi) / 2 << " font ',7' front\n";
    ++object;
  }
  gp << "set label " << object << " 'broker' at graph -0.045, graph 0.935 font ',8'\n";
  gp << "set label " << object + 1 << " 'replicas' at graph -0.045, graph 0.835 font ',8'\n";
  if (h.faults_end_ms > 0)
    gp << "set arrow from " << h.faults_end_ms / 1000 << ", graph 0 to " << h.faults_end_ms / 1000
       << ", graph 1 nohead dt 2 lc rgb '#444444'\n";
  gp << "plot '" << dir << "/timeline.dat' using 1:2 with lines lw 1.5 lc rgb '#1f77b4' "
     << "title 'acked', '' using 1:3 with lines lw 1.5 lc rgb '#2ca02c' title 'handled (first)', "
     << "'' using 1:4 axes x1y2 with impulses lw 3 lc rgb '#d62728' title 'duplicates'\n";
  gp.close();
  const std::string command = "gnuplot '" + dir + "/timeline.gp' >'" + dir + "/gnuplot.log' 2>&1";
  const int status = std::system(command.c_str());
  if (status != 0) return "gnuplot failed (see " + dir + "/gnuplot.log)";
  return "";
}

}  // namespace natsfleet::chaos
