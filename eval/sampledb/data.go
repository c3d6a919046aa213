package sampledb

// Small built-in lists the generator draws from. Changing any of them changes
// the sample rows, and with them every reference answer in the evaluation.

var firstNames = []string{
	"Anna", "Ben", "Chloe", "David", "Elena", "Felix", "Grace", "Hugo",
	"Isabel", "Jonas", "Karin", "Liam", "Maria", "Noah", "Olivia", "Pablo",
	"Quinn", "Rosa", "Samuel", "Tara", "Umar", "Vera", "William", "Ximena",
	"Yusuf", "Zoe", "Aiko", "Bruno", "Carmen", "Dmitri", "Emma", "Farah",
	"Giulia", "Henrik", "Ingrid", "Jamal", "Kenji", "Lucia", "Mateo", "Nora",
}

var lastNames = []string{
	"Schmidt", "Muller", "Rossi", "Garcia", "Martin", "Smith", "Johnson",
	"Brown", "Dubois", "Lefevre", "Kowalski", "Nowak", "Silva", "Santos",
	"Jensen", "Hansen", "Novak", "Horvat", "Tanaka", "Sato", "Kim", "Lee",
	"Nguyen", "Patel", "Singh", "Okafor", "Mensah", "Cohen", "Fischer",
	"Weber", "Romano", "Bianchi", "Fernandez", "Lopez", "Andersson",
	"Nilsson", "OConnor", "Murphy", "Walsh", "Costa",
}

var emailDomains = []string{"example.com", "example.org", "example.net"}

// place pairs a city with its country; several cities share a country so
// that per-country questions have more than a handful of rows.
type place struct{ city, country string }

var places = []place{
	{"Berlin", "Germany"}, {"Hamburg", "Germany"}, {"München", "Germany"}, {"Köln", "Germany"},
	{"Paris", "France"}, {"Lyon", "France"}, {"Marseille", "France"},
	{"Madrid", "Spain"}, {"Barcelona", "Spain"}, {"Sevilla", "Spain"},
	{"Rome", "Italy"}, {"Milan", "Italy"}, {"Naples", "Italy"},
	{"London", "United Kingdom"}, {"Manchester", "United Kingdom"}, {"Edinburgh", "United Kingdom"},
	{"New York", "United States"}, {"Chicago", "United States"}, {"Austin", "United States"}, {"Seattle", "United States"},
	{"Toronto", "Canada"}, {"Montréal", "Canada"},
	{"São Paulo", "Brazil"}, {"Rio de Janeiro", "Brazil"},
	{"Tokyo", "Japan"}, {"Osaka", "Japan"},
	{"Sydney", "Australia"}, {"Melbourne", "Australia"},
	{"Amsterdam", "Netherlands"}, {"Rotterdam", "Netherlands"},
	{"Stockholm", "Sweden"}, {"Warsaw", "Poland"}, {"Kraków", "Poland"},
	{"Zürich", "Switzerland"}, {"Dublin", "Ireland"}, {"Lisbon", "Portugal"},
}

// category holds a product category, its price range in cents and its
// products; the per-category counts add up to Products.
type category struct {
	name         string
	minCents     int
	maxCents     int
	productNames []string
}

var categories = []category{
	{"Books", 799, 4999, []string{
		"The Pragmatic Gardener", "SQL for Busy People", "A Short History of Maps",
		"Cooking with Five Ingredients", "The Night Train Mystery", "Learning Go the Hard Way",
		"Birds of Europe", "Mindful Mornings"}},
	{"Electronics", 1999, 89999, []string{
		"Wireless Earbuds", "Noise-Cancelling Headphones", "USB-C Charger 65W",
		"Mechanical Keyboard", "27-inch Monitor", "Bluetooth Speaker",
		"E-Reader", "Smartwatch"}},
	{"Home & Kitchen", 999, 24999, []string{
		"Chef's Knife", "Cast Iron Skillet", "French Press", "Electric Kettle",
		"Bamboo Cutting Board", "Stand Mixer", "Glass Storage Set", "Linen Tablecloth"}},
	{"Toys", 599, 12999, []string{
		"Wooden Train Set", "Building Blocks 500", "Plush Bear", "Puzzle 1000 Pieces",
		"Remote Control Car", "Board Game Classics", "Kite"}},
	{"Sports", 999, 39999, []string{
		"Yoga Mat", "Running Shoes", "Adjustable Dumbbells", "Tennis Racket",
		"Cycling Helmet", "Camping Tent", "Water Bottle"}},
	{"Clothing", 999, 19999, []string{
		"Wool Sweater", "Rain Jacket", "Denim Jeans", "Cotton T-Shirt",
		"Leather Belt", "Winter Gloves", "Sneakers", "Linen Shirt"}},
	{"Beauty", 499, 8999, []string{
		"Face Cream", "Shampoo Bar", "Lip Balm Set", "Sunscreen SPF 50",
		"Hair Dryer", "Perfume 50ml", "Body Lotion"}},
	{"Garden", 799, 29999, []string{
		"Garden Hose 25m", "Pruning Shears", "Terracotta Pots Set",
		"Bird Feeder", "Solar Garden Lights", "Lawn Mower", "Seed Starter Kit"}},
}
