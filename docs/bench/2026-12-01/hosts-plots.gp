set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'
set grid
set key below height 1.5
set datafile commentschars "#"
set style data linespoints
srm = 'srm (UCX_TLS=srm, via srmd on each host)'
tcp = 'tcp (UCX_TLS=tcp, UCX point-to-point TCP)'

set output 'hosts-lat.png'
unset logscale
set autoscale
set format x "%g"
set format y "%g"
set title "srm vs tcp between two simulated hosts: UCP tag_lat latency vs message size\nmedian of 3 runs per point; 2026-12-01 08:07:44 UTC; vm, 2 cores\nmachine not idle in 1 of 150 runs"
set xlabel "message size (KB = 2^10 B, MB = 2^20 B)"
set ylabel "typical (p50) latency, half a round trip (us)"
set logscale xy
set xtics ("8 B" 8, "64 B" 64, "512 B" 512, "4 KB" 4096, "8 KB" 8192, "16 KB" 16384, "64 KB" 65536, "256 KB" 262144, "1 MB" 1048576, "4 MB" 4194304)
set xrange [8/1.5:4194304*1.5]
plot 'hosts-lat.dat' using 1:2 title srm lw 2 pt 7, "" using 1:3 title tcp lw 2 pt 5

set output 'hosts-bw.png'
unset logscale
set autoscale
set format x "%g"
set format y "%g"
set title "srm vs tcp between two simulated hosts: UCP tag_bw bandwidth vs message size\nmedian of 3 runs per point; 2026-12-01 08:07:44 UTC; vm, 2 cores\nmachine not idle in 1 of 150 runs"
set xlabel "message size (KB = 2^10 B, MB = 2^20 B)"
set ylabel "bandwidth, overall (MB/s, MB = 2^20 B)"
set logscale x
set xtics ("8 B" 8, "64 B" 64, "512 B" 512, "4 KB" 4096, "8 KB" 8192, "16 KB" 16384, "64 KB" 65536, "256 KB" 262144, "1 MB" 1048576, "4 MB" 4194304)
set xrange [8/1.5:4194304*1.5]
set yrange [0:*]
plot 'hosts-bw.dat' using 1:2 title srm lw 2 pt 7, "" using 1:3 title tcp lw 2 pt 5

set output 'hosts-mr.png'
unset logscale
set autoscale
set format x "%g"
set format y "%g"
set title "srm vs tcp between two simulated hosts: UCP tag_bw 8 B aggregate message rate\nmedian of 3 runs per point; 2026-12-01 08:07:44 UTC; vm, 2 cores\nmachine not idle in 1 of 150 runs"
set xlabel "P: concurrent process pairs = processes per host"
set ylabel "aggregate message rate, sum of the P clients (msg/s)"
set logscale x 2
set logscale y
set format y "%.0s%c"
set xtics (1,2,4,8)
set xrange [1/1.25:8*1.25]
plot 'hosts-mr.dat' using 1:2 title srm lw 2 pt 7, "" using 1:3 title tcp lw 2 pt 5

unset output
