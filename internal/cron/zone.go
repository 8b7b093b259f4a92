package cron

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ZoneDataVersion is the IANA release of the embedded zone database.
const ZoneDataVersion = "2025c"

// zoneData is the IANA zone database, copied from Go 1.26's
// lib/time/zoneinfo.zip (the file time/tzdata embeds). pacer reads zones from
// this copy alone, never from the host: time.LoadLocation prefers the host's
// /usr/share/zoneinfo, whose release differs from machine to machine, and a
// worker on another release could compute other fire times for the same
// schedule. Updating the copy is a deliberate change of fire times.
//
//go:embed zoneinfo.zip
var zoneData []byte

// ErrUnknownZone is returned for a zone name the database does not hold.
var ErrUnknownZone = errors.New("unknown time zone")

var zoneIndex = sync.OnceValues(func() (map[string]*zip.File, error) {
	r, err := zip.NewReader(bytes.NewReader(zoneData), int64(len(zoneData)))
	if err != nil {
		return nil, fmt.Errorf("embedded zone database: %w", err)
	}
	idx := make(map[string]*zip.File, len(r.File))
	for _, f := range r.File {
		idx[f.Name] = f
	}
	return idx, nil
})

// LoadZone returns the named IANA zone from the embedded database. "" and
// "UTC" are UTC; "Local" is refused, since it means whatever the host is set
// to.
func LoadZone(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf(`%w "Local": name an IANA zone such as "Europe/London"`, ErrUnknownZone)
	}
	idx, err := zoneIndex()
	if err != nil {
		return nil, err
	}
	f, ok := idx[name]
	if !ok || strings.HasSuffix(name, "/") {
		return nil, fmt.Errorf("%w %.80q", ErrUnknownZone, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	return loc, nil
}
