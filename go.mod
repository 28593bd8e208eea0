module github.com/slackpoll/slackpoll

go 1.26.8
