"The shipped item catalogue and the catalogue loader."
import csv, json
import pytest
from bilateral.core import CatalogError
from bilateral.scenarios import load_catalogue, default_catalogue, Tiers, TIER_NAMES, COLUMNS

HEAD = 'id,title,category,description,listing_price,low_price,high_price\n'   # every column, in the catalogue's order

def test_shipped_catalogue_meets_its_spec(root):
    items = default_catalogue()
    assert items == load_catalogue(root / 'data' / 'items.csv')
    assert len(items) >= 300 and len({it.category for it in items}) >= 10
    prices = [it.listing_price for it in items]
    assert min(prices) <= 1000 and max(prices) >= 300000        # about $5 .. about $5,000 (cents)
    tiers = Tiers()
    for t in TIER_NAMES: assert sum(tiers.of(p) == t for p in prices) >= 0.25 * len(items), t
    assert all(0 < it.low_price <= it.listing_price <= it.high_price for it in items)
    assert len({it.title.lower() for it in items}) == len(items)
    assert all(it.description and len(it.description) <= 140 for it in items)
    with open(root / 'data' / 'items.csv', newline='') as f: assert tuple(csv.DictReader(f).fieldnames) == COLUMNS

@pytest.mark.parametrize('body,msg', [
    (HEAD + 'a,A,c,d,10,8,12\nb,B,c,d,,8,12\n', "row 3: missing column(s) listing_price"),
    (HEAD + 'a,A,c,d,abc,8,12\n', "row 2, column 'listing_price': not a number"),
    (HEAD + 'a,A,c,d,10,0,12\n', "row 2, column 'low_price': price must be positive"),
    (HEAD + 'a,A,c,d,10,-1,12\n', "row 2, column 'low_price'"),
    (HEAD + 'a,A,c,d,inf,8,12\n', "row 2, column 'listing_price'"),
    ('id,title,category,listing_price\na,A,c,10\n', 'missing column(s) description, low_price, high_price'),
    (HEAD + 'a,A,c,d,10,12,8\n', 'exceeds high_price'),
    (HEAD + 'a,A,c,d,10,8,12\na,B,c,d,10,8,12\n', 'duplicate item id'),
])
def test_loader_errors_name_row_and_column(tmp_path, body, msg):
    f = tmp_path / 'c.csv'
    f.write_text(body)
    with pytest.raises(CatalogError) as e: load_catalogue(f)
    assert msg in str(e.value)

def test_json_catalogue(tmp_path):
    f = tmp_path / 'c.json'
    item = {'id': 'x', 'title': 'X', 'category': 'c', 'description': 'd', 'listing_price': 12.5, 'low_price': 10,
            'high_price': 15}
    f.write_text(json.dumps([item]))
    assert load_catalogue(f)[0].listing_price == 1250
    f.write_text(json.dumps({'id': 'x'}))
    with pytest.raises(CatalogError, match='list of objects'): load_catalogue(f)
    f.write_text(json.dumps([{**item, 'listing_price': 'free'}]))
    with pytest.raises(CatalogError, match="row 1, column 'listing_price'"): load_catalogue(f)
