package main

import (
	"fmt"

	"example.com/mod/lib"
)

func main() {
	c := lib.Config{Name: "x"}
	fmt.Println(lib.Used(), c.Run(), c)
}
