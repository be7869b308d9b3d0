// The nats.go baseline of natsfleet-daemon-bench: a fetch loop over a durable pull consumer that
// writes each payload to a file and acks it, timed from the first message in hand to the last.
// Prints "<msg/s> <client CPU us/msg>".
//
//	natsfleet-go-fetch-loop URL STREAM SUBJECT DURABLE MESSAGES BATCH FILE
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

func cpuMicros() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Utime.Sec+u.Stime.Sec)*1e6 + float64(u.Utime.Usec+u.Stime.Usec)
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "go fetch loop: %s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 8 {
		fmt.Fprintln(os.Stderr, "usage: natsfleet-go-fetch-loop URL STREAM SUBJECT DURABLE MESSAGES BATCH FILE")
		os.Exit(2)
	}
	url, stream, subject, durable := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	messages, _ := strconv.Atoi(os.Args[5])
	batch, _ := strconv.Atoi(os.Args[6])
	nc, err := nats.Connect(url)
	if err != nil {
		fail("connect", err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		fail("jetstream", err)
	}
	sub, err := js.PullSubscribe(subject, durable, nats.BindStream(stream), nats.AckExplicit(),
		nats.MaxAckPending(1000))
	if err != nil {
		fail("pull subscribe", err)
	}
	out, err := os.OpenFile(os.Args[7], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fail("open", err)
	}
	got := 0
	var start time.Time
	var cpuStart float64
	line := make([]byte, 0, 256)
	for got < messages {
		msgs, err := sub.Fetch(batch, nats.MaxWait(5*time.Second))
		if err != nil && err != nats.ErrTimeout {
			fail("fetch", err)
		}
		if got == 0 && len(msgs) > 0 {
			start = time.Now()
			cpuStart = cpuMicros()
		}
		for _, m := range msgs {
			line = append(append(line[:0], m.Data...), '\n')
			if _, err := out.Write(line); err != nil {
				fail("write", err)
			}
			if err := m.Ack(); err != nil {
				fail("ack", err)
			}
		}
		got += len(msgs)
	}
	if err := nc.Flush(); err != nil {
		fail("flush", err)
	}
	seconds := time.Since(start).Seconds()
	fmt.Printf("%.0f %.2f\n", float64(messages-1)/seconds, (cpuMicros()-cpuStart)/float64(messages))
}
