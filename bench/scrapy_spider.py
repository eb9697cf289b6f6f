"""The benchmark's Scrapy peer: a plain spider that follows every on-site link.

Run by bench/run with the Debian package python3-scrapy:

    scrapy runspider bench/scrapy_spider.py -a start=http://127.0.0.1:8080/ \
        -a stats_file=scrapy.json -s CONCURRENT_REQUESTS=16 ...

Scrapy's defaults stay, except what a fair comparison needs (set by bench/run
with -s): CONCURRENT_REQUESTS and CONCURRENT_REQUESTS_PER_DOMAIN equal to the
benchmark's concurrency, ROBOTSTXT_OBEY on, no download delay, no telnet
console. Scrapy's own duplicate filter drops fragments and sorts query
parameters, which matches the site's canonical URLs; fragments are stripped
here too so the request URLs are the ones the other crawlers fetch.

At the end it writes pages (unique URLs of HTML responses with status 200
that reached parse) and Scrapy's stats to stats_file as JSON.
"""

import json
from urllib.parse import urldefrag, urlsplit

import scrapy
from scrapy.http import HtmlResponse


class BenchSpider(scrapy.Spider):
    name = "bench"

    def __init__(self, start=None, stats_file=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not start or not stats_file:
            raise ValueError("need -a start=URL -a stats_file=PATH")
        self.start_urls = [start]
        # Same-domain only: the OffsiteMiddleware drops requests to other hosts.
        self.allowed_domains = [urlsplit(start).hostname]
        self.stats_file = stats_file
        # Scrapy fetches the start URL twice by default (start requests skip
        # the duplicate filter), so unique pages are counted by URL.
        self.urls = set()
        self.parsed = 0

    def parse(self, response):
        if not isinstance(response, HtmlResponse):
            return
        self.parsed += 1
        self.urls.add(response.url)
        for href in response.css("a::attr(href)").getall():
            url, _ = urldefrag(response.urljoin(href))
            if url.startswith(("http://", "https://")):
                yield scrapy.Request(url, callback=self.parse)

    def closed(self, reason):
        stats = self.crawler.stats.get_stats()
        with open(self.stats_file, "w") as f:
            json.dump(
                {
                    "pages": len(self.urls),
                    "parsed": self.parsed,
                    "reason": reason,
                    "requests": stats.get("downloader/request_count", 0),
                    "responses": stats.get("response_received_count", 0),
                    "errors": stats.get("log_count/ERROR", 0),
                    "dupefilter_filtered": stats.get("dupefilter/filtered", 0),
                    "offsite_filtered": stats.get("offsite/filtered", 0),
                    "stats": stats,
                },
                f,
                default=str,
                indent=1,
            )
