set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'
set grid
set key below height 1.5
set datafile commentschars "#"
set style data linespoints

set output 'mesh-o2m.png'
set title "one-to-many: rank 0 to 8 ranks on 2 other hosts\nmedian of 3 runs per point; 3 simulated hosts; 2026-12-01 08:10:53 UTC; vm, 2 cores"
set xlabel "message size"
set ylabel "received data, all receivers (MB/s, MB = 2^20 B)"
set logscale x
set xtics ("8 B" 8, "64 KB" 65536)
set xrange [8/2:65536*2]
set yrange [0:*]
plot 'mesh-o2m.dat' using 1:2 title "srm" lw 2 pt 7, "" using 1:3 title "tcp" lw 2 pt 5

set output 'mesh-rate.png'
unset logscale
set autoscale
set title "full mesh, 8 B: message rate\nmedian of 3 runs per point; 3 simulated hosts; 2026-12-01 08:10:53 UTC; vm, 2 cores"
set xlabel "P: ranks per host"
set ylabel "data messages received per second, all ranks"
set logscale x 2
set xtics (1,2,4,8)
set xrange [1/1.25:8*1.25]
set yrange [0:*]
plot 'mesh-rate.dat' using 1:2 title "srm" lw 2 pt 7, "" using 1:3 title "tcp" lw 2 pt 5

set output 'mesh-lat.png'
set autoscale
set xrange [1/1.25:8*1.25]
set title "full mesh, 8 B: latency (round trip / 2) under load\nmedian of 3 runs per point; 3 simulated hosts; 2026-12-01 08:10:53 UTC; vm, 2 cores"
set ylabel "latency (us)"
set logscale y
plot 'mesh-lat.dat' using 1:2 title "srm p50" lw 2 pt 7 lc 1 dt 1, "" using 1:3 title "srm p99" lw 2 pt 7 lc 1 dt 2, "" using 1:4 title "srm p99.9" lw 2 pt 7 lc 1 dt 3, "" using 1:5 title "tcp p50" lw 2 pt 5 lc 2 dt 1, "" using 1:6 title "tcp p99" lw 2 pt 5 lc 2 dt 2, "" using 1:7 title "tcp p99.9" lw 2 pt 5 lc 2 dt 3

unset output
