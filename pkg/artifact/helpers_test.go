package artifact

import (
	"strconv"
	"time"
)

func ptr[T any](v T) *T { return &v }

func itoa(i int) string { return strconv.Itoa(i) }

func zeroTime(year int) time.Time { return time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC) }
