package main

import (
	"net/url"
	"strings"

	"github.com/hibiken/asynq"
)

// The broker a configuration names: its URL checked before anything is recorded.

func (c *Config) redis() (asynq.RedisConnOpt, error) {
	opt, err := asynq.ParseRedisURI(c.RedisURL)
	if err != nil {
		return nil, usageErr("redis URL %q: %v", redactURL(c.RedisURL), err)
	}
	// A Sentinel URL without a master name parses, and then fails every
	// call after a 15 s timeout: refuse it before anything is recorded.
	if f, ok := opt.(asynq.RedisFailoverClientOpt); ok {
		const form = "redis-sentinel://[:password@]host:port[,host:port...][/db]?master=NAME"
		u, _ := url.Parse(c.RedisURL)
		switch {
		case f.MasterName == "" && u != nil && strings.Trim(u.Path, "/") != "" && !isDigits(strings.Trim(u.Path, "/")):
			return nil, usageErr("redis URL %q: the master's name goes in ?master=%s, not in the path: want %s", redactURL(c.RedisURL), strings.Trim(u.Path, "/"), form)
		case f.MasterName == "":
			return nil, usageErr("redis URL %q: a Sentinel URL needs the master's name: want %s", redactURL(c.RedisURL), form)
		case len(f.SentinelAddrs) == 0:
			return nil, usageErr("redis URL %q: no Sentinel address: want %s", redactURL(c.RedisURL), form)
		}
	}
	return opt, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
