module kylix

go 1.26
