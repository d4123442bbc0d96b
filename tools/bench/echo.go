// SPDX-License-Identifier: MIT
//
// The Go peer of 'vmstack bench echo': a TCP echo server on loopback, one
// goroutine per connection, as a Go user writes it. Prints its port on
// stdout when it listens. GOMAXPROCS comes from the environment.
package main

import (
	"fmt"
	"net"
	"os"
)

func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo.go:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go serve(c)
	}
}
