// go-mutex: Go's own etcd lock (go.etcd.io/etcd/clientv3/concurrency.Mutex, the one
// `etcdctl lock` runs), for chainlock's interop test (tests/distributed_etcd.rs).
//
//	go-mutex ENDPOINTS NAME
//
// Prints "waiting", takes the mutex NAME, prints "held KEY CREATE_REVISION", holds it until a
// line is read or stdin closes, unlocks and prints "released".
//
//	go-mutex bench ENDPOINTS SAMPLES
//
// The benchmark of benches/distributed.rs, with Go's mutex on sessions kept for the whole run
// (as a long-lived Go service keeps them): SAMPLES uncontended Lock + Unlock pairs on a free
// name, and SAMPLES hand-offs between two clients (the holder unlocks at t0, the waiter,
// already waiting, holds at t1), printed as "uncontended P50_NS P99_NS" and
// "hand-off P50_NS P99_NS".
//
// scripts/etcd.sh builds it offline in GOPATH mode from Debian's golang-etcd-server-dev (etcd
// 3.4's client).
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

func fail(what string, err error) {
	fmt.Fprintln(os.Stderr, what+":", err)
	os.Exit(1)
}

func connect(endpoints string) (*clientv3.Client, *concurrency.Session) {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(endpoints, ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		fail("connect", err)
	}
	session, err := concurrency.NewSession(client, concurrency.WithTTL(10))
	if err != nil {
		fail("session", err)
	}
	return client, session
}

// The per-mille percentile (nearest rank) of sorted samples, as benches/distributed.rs takes it.
func percentile(sorted []time.Duration, perMille int) int64 {
	return int64(sorted[((len(sorted)-1)*perMille+999)/1000])
}

func report(label string, samples []time.Duration) {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	fmt.Printf("%s %d %d\n", label, percentile(samples, 500), percentile(samples, 990))
}

func bench(endpoints string, samples int) {
	ctx := context.Background()
	name := fmt.Sprintf("go-bench-%d", os.Getpid())
	client, session := connect(endpoints)
	defer client.Close()
	defer session.Close()
	mutex := concurrency.NewMutex(session, name+"/uncontended")
	cycles := make([]time.Duration, 0, samples)
	for i := 0; i < samples; i++ {
		start := time.Now()
		if err := mutex.Lock(ctx); err != nil {
			fail("lock", err)
		}
		if err := mutex.Unlock(ctx); err != nil {
			fail("unlock", err)
		}
		cycles = append(cycles, time.Since(start))
	}
	report("uncontended", cycles)

	other, otherSession := connect(endpoints)
	defer other.Close()
	defer otherSession.Close()
	holder := concurrency.NewMutex(session, name+"/hand-off")
	waiter := concurrency.NewMutex(otherSession, name+"/hand-off")
	handOffs := make([]time.Duration, 0, samples)
	for i := 0; i < samples; i++ {
		if err := holder.Lock(ctx); err != nil {
			fail("lock", err)
		}
		holding := make(chan time.Time)
		go func() {
			if err := waiter.Lock(ctx); err != nil {
				fail("lock", err)
			}
			at := time.Now()
			if err := waiter.Unlock(ctx); err != nil {
				fail("unlock", err)
			}
			holding <- at
		}()
		// As the Rust harness: let the waiter queue, then release.
		time.Sleep(5 * time.Millisecond)
		released := time.Now()
		if err := holder.Unlock(ctx); err != nil {
			fail("unlock", err)
		}
		handOffs = append(handOffs, (<-holding).Sub(released))
	}
	report("hand-off", handOffs)
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "bench" {
		samples, err := strconv.Atoi(os.Args[3])
		if err != nil || samples < 1 {
			fmt.Fprintln(os.Stderr, "go-mutex bench: SAMPLES must be a positive number")
			os.Exit(2)
		}
		bench(os.Args[2], samples)
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go-mutex ENDPOINTS NAME | go-mutex bench ENDPOINTS SAMPLES")
		os.Exit(2)
	}
	client, session := connect(os.Args[1])
	defer client.Close()
	defer session.Close()
	mutex := concurrency.NewMutex(session, os.Args[2])
	fmt.Println("waiting")
	if err := mutex.Lock(context.Background()); err != nil {
		fail("lock", err)
	}
	own, err := client.Get(context.Background(), mutex.Key())
	if err != nil || len(own.Kvs) != 1 {
		fail("get own key", err)
	}
	fmt.Printf("held %s %d\n", mutex.Key(), own.Kvs[0].CreateRevision)
	bufio.NewReader(os.Stdin).ReadString('\n')
	if err := mutex.Unlock(context.Background()); err != nil {
		fail("unlock", err)
	}
	fmt.Println("released")
}
