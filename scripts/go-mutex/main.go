// go-mutex: Go's own etcd lock (go.etcd.io/etcd/clientv3/concurrency.Mutex, the one
// `etcdctl lock` runs), for chainlock's interop test (tests/distributed_etcd.rs).
//
//	go-mutex ENDPOINTS NAME
//
// Prints "waiting", takes the mutex NAME, prints "held KEY CREATE_REVISION", holds it until a
// line is read or stdin closes, unlocks and prints "released". scripts/etcd.sh builds it
// offline in GOPATH mode from Debian's golang-etcd-server-dev (etcd 3.4's client).
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

func fail(what string, err error) {
	fmt.Fprintln(os.Stderr, what+":", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go-mutex ENDPOINTS NAME")
		os.Exit(2)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(os.Args[1], ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		fail("connect", err)
	}
	defer client.Close()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(10))
	if err != nil {
		fail("session", err)
	}
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
