module github.com/meridian-gw/meridian

go 1.26.8
