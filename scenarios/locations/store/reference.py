#!/usr/bin/env python3
"""Reference answers of the Locations API, computed straight from the store (no service involved).

Used to derive the expected answers in ../scenario.toml, and to re-check them after the data or the
store version changes:

    python3 reference.py [--url http://127.0.0.1:9200] get 101748111 cs
    python3 reference.py featured sk
    python3 reference.py search "plzen" cs [COUNTRY]
    python3 reference.py closest 49.74 13.38 cs          # lat lon
    python3 reference.py closest-featured 50.08 14.43 cs # the geo-IP variant (featured cities only)
    python3 reference.py associated 101758551 cs

Standard library only. The queries are the ones /work/shared/specs/locations.md describes.
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

EXCLUDED = "geometry,population"
HOME_COUNTRY = {"cs": "CZ", "en": "CZ", "de": "DE", "pl": "PL", "sk": "SK"}


class Store:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def _call(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def doc(self, index, doc_id):
        found = self._call(f"/{index}/_doc/{doc_id}?_source_excludes={EXCLUDED}")
        return found["_source"] if found and found.get("found") else None

    def search_cities(self, body, size):
        answer = self._call(f"/city/_search?size={size}&_source_excludes={EXCLUDED}", body)
        return [hit["_source"] for hit in answer["hits"]["hits"]]


def city_response(store, city, lang):
    region = store.doc("region", city["regionId"])
    return {"id": city["id"], "isFeatured": city["isFeatured"], "countryIso": city["countryIso"],
            "name": city[f"name.{lang}"], "regionName": region[f"name.{lang}"]}


def get(store, city_id, lang):
    city = store.doc("city", city_id)
    return city_response(store, city, lang) if city else None


def featured(store, lang):
    cities = store.search_cities({"query": {"term": {"isFeatured": True}},
                                  "sort": ["countryIso", {"population": "desc"}]}, 1000)
    home = HOME_COUNTRY[lang]
    cities = [c for c in cities if c["countryIso"] == home] + [c for c in cities if c["countryIso"] != home]
    return {"cities": [city_response(store, c, lang) for c in cities]}


def search(store, query, lang, country=None):
    fields = []
    for prefix, boost in [(f"name.{lang}.autocomplete", 8), (f"name.{lang}.autocomplete_ascii", 4),
                          ("name.all.autocomplete", 2), ("name.all.autocomplete_ascii", 1)]:
        fields += [f"{prefix}^{boost}", f"{prefix}._2gram^{boost}", f"{prefix}._3gram^{boost}"]
    body = {"query": {"function_score": {
        "query": {"bool": {
            "must": [{"multi_match": {"query": query, "type": "bool_prefix", "fields": fields}}],
            "filter": [{"term": {"countryIso": country}}] if country else []}},
        "functions": [{"field_value_factor": {"field": "population", "modifier": "ln2p", "missing": 500}}]}}}
    return {"cities": [city_response(store, c, lang) for c in store.search_cities(body, 10)]}


def closest_city(store, lat, lon, featured_only=False):
    featured_filter = [{"term": {"isFeatured": True}}] if featured_only else []
    shape = {"geo_shape": {"geometry": {"shape": {"type": "Point", "coordinates": [lon, lat]}}}}
    inside = store.search_cities({"query": {"bool": {"filter": [shape] + featured_filter}}}, 1)
    if inside:
        return inside[0]
    query = {"bool": {"filter": featured_filter}} if featured_only else {"match_all": {}}
    nearest = store.search_cities({"query": query, "sort": {"_geo_distance": {"centroid": {"lat": lat, "lon": lon}}}}, 1)
    return nearest[0]


def associated(store, city_id, lang):
    city = store.doc("city", city_id)
    if city is None:
        return None
    if not city["isFeatured"]:
        c = city["centroid"]
        city = store.search_cities({"query": {"term": {"isFeatured": True}},
                                    "sort": {"_geo_distance": {"centroid": {"lat": c["lat"], "lon": c["lon"]}}}}, 1)[0]
    return city_response(store, city, lang)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("endpoint", choices=["get", "featured", "search", "closest", "closest-featured", "associated"])
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    store, args = Store(a.url), a.args
    if a.endpoint == "get":
        out = get(store, args[0], args[1])
    elif a.endpoint == "featured":
        out = featured(store, args[0])
    elif a.endpoint == "search":
        out = search(store, args[0], args[1], args[2] if len(args) > 2 else None)
    elif a.endpoint in ("closest", "closest-featured"):
        city = closest_city(store, float(args[0]), float(args[1]), a.endpoint == "closest-featured")
        out = city_response(store, city, args[2])
    else:
        out = associated(store, args[0], args[1])
    json.dump(out, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
